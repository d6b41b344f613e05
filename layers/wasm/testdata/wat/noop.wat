;; noop: the smallest ABI v1 guest; it answers {"rewrites":[]}.
(module
  (memory (export "memory") 4)
  (global $heap (mut i32) (i32.const 65536))
  (data (i32.const 512) "{\22rewrites\22:[]}")
  (func (export "plugin_abi_v1"))
  (func (export "plugin_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "plugin_free") (param i32 i32))
  (func (export "plugin_transform") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 512) (i64.const 32)) (i64.const 15))))

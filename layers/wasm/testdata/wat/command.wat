;; command: the shape of a Go guest built without -buildmode=c-shared. It
;; exports every ABI v1 function, and _start instead of _initialize; its
;; runtime would be set up by _start, so plugin_alloc traps until then.
(module
  (memory (export "memory") 1)
  (global $ready (mut i32) (i32.const 0))
  (func (export "_start") (global.set $ready (i32.const 1)))
  (func (export "plugin_abi_v1"))
  (func (export "plugin_alloc") (param i32) (result i32)
    (if (i32.eqz (global.get $ready)) (then unreachable))
    (i32.const 1024))
  (func (export "plugin_free") (param i32 i32))
  (func (export "plugin_transform") (param i32 i32) (result i64) (i64.const 0)))

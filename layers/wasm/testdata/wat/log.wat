;; log: forges log lines. Its initialization (_initialize) and each call
;; write {{LINES}} lines through host.log at level 3 (warn); each holds a
;; newline, a fake hclog line and terminal escapes (clear the screen, a
;; colour, a bidi override), and answers {"rewrites":[]}.
(module
  (import "host" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 4)
  (global $heap (mut i32) (i32.const 65536))
  (data (i32.const 1024) "{{LINE}}")
  (data (i32.const 512) "{\22rewrites\22:[]}")
  (func $spam
    (local $i i32)
    (loop $again
      (call $log (i32.const 3) (i32.const 1024) (i32.const {{LINELEN}}))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const {{LINES}})))))
  (func (export "_initialize") (call $spam))
  (func (export "plugin_abi_v1"))
  (func (export "plugin_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "plugin_free") (param i32 i32))
  (func (export "plugin_transform") (param i32 i32) (result i64)
    (call $spam)
    (i64.or (i64.shl (i64.const 512) (i64.const 32)) (i64.const 15))))

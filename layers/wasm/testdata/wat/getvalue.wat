;; getvalue: asks host.get_value and host.get_config for the path that the
;; test renders into the PATH placeholder (PATHLEN bytes), with a 1 MiB
;; buffer, REPEAT times each, and answers
;; {"payload":{"value":<last code>,"config":<last code>}}.
(module
  (import "host" "get_value" (func $get_value (param i32 i32 i32 i32) (result i64)))
  (import "host" "get_config" (func $get_config (param i32 i32 i32 i32) (result i64)))
  (memory (export "memory") 112)
  (global $heap (mut i32) (i32.const 2097152))
  (data (i32.const 3145728) "{{PATH}}")
  (data (i32.const 512) "{\22payload\22:{\22value\22:")
  (data (i32.const 600) ",\22config\22:")
  (func (export "plugin_abi_v1"))
  (func (export "plugin_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "plugin_free") (param i32 i32))
  ;; itoa writes v in decimal at p and returns the end.
  (func $itoa (param $v i64) (param $p i32) (result i32)
    (local $start i32) (local $end i32) (local $t i32)
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then
        (i32.store8 (local.get $p) (i32.const 45))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (local.set $v (i64.sub (i64.const 0) (local.get $v)))))
    (local.set $start (local.get $p))
    (loop $digits
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (local.set $end (local.get $p))
    ;; reverse [start, end)
    (local.set $p (i32.sub (local.get $p) (i32.const 1)))
    (block $done
      (loop $rev
        (br_if $done (i32.ge_u (local.get $start) (local.get $p)))
        (local.set $t (i32.load8_u (local.get $start)))
        (i32.store8 (local.get $start) (i32.load8_u (local.get $p)))
        (i32.store8 (local.get $p) (local.get $t))
        (local.set $start (i32.add (local.get $start) (i32.const 1)))
        (local.set $p (i32.sub (local.get $p) (i32.const 1)))
        (br $rev)))
    (local.get $end))
  (func (export "plugin_transform") (param i32 i32) (result i64)
    (local $v i64) (local $c i64) (local $i i32) (local $o i32)
    (loop $again
      (local.set $v (call $get_value (i32.const 3145728) (i32.const {{PATHLEN}}) (i32.const 65536) (i32.const 1048576)))
      (local.set $c (call $get_config (i32.const 3145728) (i32.const {{PATHLEN}}) (i32.const 65536) (i32.const 1048576)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const {{REPEAT}}))))
    ;; the response at 1 MiB + 64 KiB
    (local.set $o (i32.const 1114112))
    (memory.copy (local.get $o) (i32.const 512) (i32.const 20))
    (local.set $o (call $itoa (local.get $v) (i32.add (local.get $o) (i32.const 20))))
    (memory.copy (local.get $o) (i32.const 600) (i32.const 10))
    (local.set $o (call $itoa (local.get $c) (i32.add (local.get $o) (i32.const 10))))
    (i32.store16 (local.get $o) (i32.const 0x7d7d)) ;; "}}"
    (local.set $o (i32.add (local.get $o) (i32.const 2)))
    (i64.or
      (i64.shl (i64.const 1114112) (i64.const 32))
      (i64.extend_i32_u (i32.sub (local.get $o) (i32.const 1114112))))))

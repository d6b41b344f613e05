;; keep: remembers the last request it was given and answers with it:
;; {"payload":{"prev":<the previous request, or null>}}. A pooled instance
;; shared between servers or tenants would hand one caller's arguments to
;; the next.
(module
  (memory (export "memory") 64)
  (global $heap (mut i32) (i32.const 65536))
  (global $prev_len (mut i32) (i32.const 0))
  (data (i32.const 512) "{\22payload\22:{\22prev\22:")
  (data (i32.const 600) "null}}")
  (func (export "plugin_abi_v1"))
  (func (export "plugin_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "plugin_free") (param i32 i32))
  (func (export "plugin_transform") (param $req i32) (param $len i32) (result i64)
    (local $o i32)
    ;; the response at 2 MiB
    (local.set $o (i32.const 2097152))
    (memory.copy (local.get $o) (i32.const 512) (i32.const 19))
    (local.set $o (i32.add (local.get $o) (i32.const 19)))
    (if (i32.eqz (global.get $prev_len))
      (then
        (memory.copy (local.get $o) (i32.const 600) (i32.const 4))
        (local.set $o (i32.add (local.get $o) (i32.const 4))))
      (else
        (memory.copy (local.get $o) (i32.const 1048576) (global.get $prev_len))
        (local.set $o (i32.add (local.get $o) (global.get $prev_len)))))
    (i32.store16 (local.get $o) (i32.const 0x7d7d)) ;; "}}"
    (local.set $o (i32.add (local.get $o) (i32.const 2)))
    ;; keep this request, at 1 MiB, for the next call
    (memory.copy (i32.const 1048576) (local.get $req) (local.get $len))
    (global.set $prev_len (local.get $len))
    (i64.or
      (i64.shl (i64.const 2097152) (i64.const 32))
      (i64.extend_i32_u (i32.sub (local.get $o) (i32.const 2097152))))))

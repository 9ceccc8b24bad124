;; A hostile `paddock:plugin` core module whose tools grow a function table, for the escape
;; suite (tests/escape/). Rust cannot emit `table.grow`, so this one is hand-written: the suite
;; embeds wit/plugin.wit's `plugin` world into it and wraps it as a component at test time.
;;
;; Tools: `grow` adds 1,000 elements (the permitted twin); `bomb` adds 10,000 at a time until
;; the host refuses, and answers the error `table.grow refused` (or, past 2,000,000 elements,
;; the same success as `grow`, which the suite treats as the defence failing).
;;
;; Results are static canonical-ABI values at fixed addresses (all other fields zero: `none`,
;; empty lists). Every export takes its parameters through one pointer (a request context
;; flattens to more than 16 values); in that tuple the tool name is the string at offset 132.
;;   256  plugin-info            name "tablebomb", version "0.1.0"
;;   512  tool[2]                "grow", "bomb", input schema {"type":"object"} (112 bytes each)
;;   736  tool-list              (512, 2), no cache hint
;;   752  result::err            error::failed("unsupported")            (call, prompt, completion)
;;   784  result::err            error::failed("table.grow refused")     (call)
;;   816  result::ok             call-outcome::complete { content: [], structured-content: {"grown":true} }
;;   864  empty list record      (0, 0), no cache hint                   (resources, templates, prompts)
;;   896  result::err            error::failed("unsupported")            (read, 8-aligned payload)
(module
  (memory (export "memory") 4)
  (table $table 1 funcref)
  (global $heap (mut i32) (i32.const 65536))

  (data (i32.const 100) "tablebomb")
  (data (i32.const 120) "0.1.0")
  (data (i32.const 130) "grow")
  (data (i32.const 140) "bomb")
  (data (i32.const 150) "{\"type\":\"object\"}")
  (data (i32.const 170) "{\"grown\":true}")
  (data (i32.const 190) "table.grow refused")
  (data (i32.const 210) "unsupported")
  (data (i32.const 256) "\64\00\00\00\09\00\00\00\78\00\00\00\05\00\00\00")
  (data (i32.const 512) "\82\00\00\00\04\00\00\00")
  (data (i32.const 544) "\96\00\00\00\11\00\00\00")
  (data (i32.const 624) "\8c\00\00\00\04\00\00\00")
  (data (i32.const 656) "\96\00\00\00\11\00\00\00")
  (data (i32.const 736) "\00\02\00\00\02\00\00\00")
  (data (i32.const 752) "\01\00\00\00\02\00\00\00\d2\00\00\00\0b\00\00\00")
  (data (i32.const 784) "\01\00\00\00\02\00\00\00\be\00\00\00\12\00\00\00")
  (data (i32.const 816) "\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\01\00\00\00\aa\00\00\00\0e\00\00\00")
  (data (i32.const 896) "\01\00\00\00\00\00\00\00\02\00\00\00\d2\00\00\00\0b\00\00\00")

  ;; A bump allocator for the strings the host passes in; each call has a fresh instance.
  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $size i32) (result i32)
    (local $at i32)
    (local.set $at
      (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get $align))))
    (global.set $heap (i32.add (local.get $at) (local.get $size)))
    (if (i32.gt_u (global.get $heap) (i32.const 262144)) (then unreachable))
    (local.get $at))

  (func (export "paddock:plugin/metadata@0.2.0#info") (result i32) (i32.const 256))
  (func (export "paddock:plugin/tools@0.2.0#list-tools") (result i32) (i32.const 736))

  (func (export "paddock:plugin/tools@0.2.0#call-tool") (param $params i32) (result i32)
    ;; "grow": 1,000 elements, well inside the host's cap.
    (if (i32.eq (i32.load8_u (i32.load (i32.add (local.get $params) (i32.const 132)))) (i32.const 0x67))
      (then
        (if (i32.eq (table.grow $table (ref.null func) (i32.const 1000)) (i32.const -1))
          (then (return (i32.const 784))))
        (return (i32.const 816))))
    ;; "bomb": grow until refused.
    (block $refused
      (loop $again
        (br_if $refused (i32.eq (table.grow $table (ref.null func) (i32.const 10000)) (i32.const -1)))
        (br_if $again (i32.lt_u (table.size $table) (i32.const 2000000)))))
    (if (i32.lt_u (table.size $table) (i32.const 2000000))
      (then (return (i32.const 784))))
    (i32.const 816))

  (func (export "paddock:plugin/resources@0.2.0#list-resources") (result i32) (i32.const 864))
  (func (export "paddock:plugin/resources@0.2.0#list-resource-templates") (result i32) (i32.const 864))
  (func (export "paddock:plugin/resources@0.2.0#read-resource") (param i32) (result i32) (i32.const 896))
  (func (export "paddock:plugin/prompts@0.2.0#list-prompts") (result i32) (i32.const 864))
  (func (export "paddock:plugin/prompts@0.2.0#get-prompt") (param i32) (result i32) (i32.const 752))
  (func (export "paddock:plugin/completion@0.2.0#complete") (param i32) (result i32) (i32.const 752))
)

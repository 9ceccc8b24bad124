//! Unit tests of result conversion: wire-size accounting against the serialized result, and
//! malformed guest values.

use super::*;

/// The bytes `value` takes in a message, as the session writes it (`to_value`, then compact
/// text).
fn wire_len<T: serde::Serialize>(value: &T) -> u64 {
    serde_json::to_value(value).expect("serializes").to_string().len() as u64
}

/// Text that costs far more on the wire than its length: controls without a short escape,
/// quotes, backslashes, newlines, and a character outside ASCII.
fn costly(repeat: usize) -> String {
    "\u{0}\u{1b}\"\\\n\u{7f}é".repeat(repeat)
}

fn full_annotations() -> Option<w::Annotations> {
    Some(w::Annotations { audience: vec![w::Role::User, w::Role::Assistant, w::Role::User], priority: Some(0.1 + 0.2), last_modified: Some(costly(2)) })
}

fn icon() -> w::Icon {
    w::Icon { src: costly(1), mime_type: Some("image/png".into()), sizes: vec![String::new(), costly(1)], theme: None }
}

fn contents(blob: bool) -> w::ResourceContents {
    w::ResourceContents {
        uri: costly(1),
        mime_type: Some(costly(1)),
        body: if blob { w::ResourceBody::Blob(vec![1, 2, 3, 4]) } else { w::ResourceBody::Text(costly(3)) },
        // Numbers re-serialize longer than the guest wrote them.
        meta: Some(r#"{ "n": [1e15, 1E2, -0, 0.5e1], "s": "\u00e9\/" }"#.into()),
    }
}

/// One of every kind of block, bare and full.
fn every_block() -> Vec<w::ContentBlock> {
    let text = |text: String, annotations| w::ContentBlock::Text(w::TextContent { text, annotations, meta: None });
    let media = |data: Vec<u8>, annotations| w::MediaContent { data, mime_type: costly(1), annotations, meta: None };
    vec![
        text(String::new(), None),
        text(costly(5), full_annotations()),
        text(String::new(), Some(w::Annotations { audience: vec![], priority: Some(f64::NAN), last_modified: None })),
        w::ContentBlock::Image(media(vec![], None)),
        w::ContentBlock::Audio(media(vec![0, 255, 7, 9, 11], full_annotations())),
        w::ContentBlock::ResourceLink(w::ResourceLink {
            uri: String::new(),
            name: String::new(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: vec![],
            annotations: None,
            meta: None,
        }),
        w::ContentBlock::ResourceLink(w::ResourceLink {
            uri: costly(1),
            name: costly(1),
            title: Some(costly(1)),
            description: Some(String::new()),
            mime_type: Some("text/plain".into()),
            size: Some(u64::MAX),
            icons: vec![icon(), w::Icon { src: String::new(), mime_type: None, sizes: vec![], theme: Some("dark".into()) }],
            annotations: full_annotations(),
            meta: None,
        }),
        w::ContentBlock::Resource(w::EmbeddedResource { resource: contents(false), annotations: None, meta: None }),
        w::ContentBlock::Resource(w::EmbeddedResource { resource: contents(true), annotations: full_annotations(), meta: None }),
    ]
}

fn call(content: Vec<w::ContentBlock>) -> wt::CallResult {
    wt::CallResult { content, structured_content: Some(r#"{"big": 1e15, "text": "\n"}"#.into()), is_error: true, meta: Some("{}".into()) }
}

#[test]
fn output_over_budget_is_a_limit() {
    let mut budget = Budget::new(10);
    let block = w::ContentBlock::Text(w::TextContent { text: "x".repeat(11), annotations: None, meta: None });
    assert_eq!(content_block(block, &mut budget).expect_err("too big"), PluginError::Limit { limit: crate::plugin::Limit::Output });
}

#[test]
fn every_item_is_charged_exactly_what_it_takes_on_the_wire() {
    let mut budget = Budget::new(u64::MAX);
    let result = call_result(call(every_block()), &mut budget).expect("converts");
    assert_eq!(wire_len(&result), budget.spent(), "bytes sent and bytes charged");

    let mut budget = Budget::new(u64::MAX);
    let messages = every_block()
        .into_iter()
        .enumerate()
        .map(|(i, content)| wp::PromptMessage { role: if i % 2 == 0 { w::Role::User } else { w::Role::Assistant }, content })
        .collect();
    let prompt = prompt_result(wp::PromptResult { description: Some(costly(2)), messages, meta: None }, &mut budget).expect("converts");
    assert_eq!(wire_len(&prompt), budget.spent(), "bytes sent and bytes charged");

    let mut budget = Budget::new(u64::MAX);
    let list = resource_list(vec![contents(false), contents(true)], &mut budget).expect("converts");
    assert_eq!(wire_len(&list), budget.spent(), "bytes sent and bytes charged");

    let mut budget = Budget::new(u64::MAX);
    let values = (0..150).map(|i| if i % 2 == 0 { String::new() } else { costly(1) }).collect();
    let done = completion(wc::CompletionResult { values, total: Some(u32::MAX), has_more: false }, &mut budget).expect("converts");
    assert!(done.has_more);
    assert_eq!(wire_len(&done), budget.spent(), "bytes sent and bytes charged");
}

#[test]
fn empty_blocks_and_escapes_cost_what_they_cost_on_the_wire() {
    let limit = 1 << 20;
    // A million empty text blocks are 26 MB on the wire, whatever their text.
    let empty = || w::ContentBlock::Text(w::TextContent { text: String::new(), annotations: None, meta: None });
    let many = call(std::iter::repeat_with(empty).take(1_000_000).collect());
    assert_eq!(call_result(many, &mut Budget::new(limit)).expect_err("refused"), PluginError::Limit { limit: crate::plugin::Limit::Output });
    // A MiB of control characters is 6 MiB of escapes.
    let controls = w::ContentBlock::Text(w::TextContent { text: "\u{1}".repeat(1 << 20), annotations: None, meta: None });
    assert_eq!(call_result(call(vec![controls]), &mut Budget::new(limit)).expect_err("refused"), PluginError::Limit { limit: crate::plugin::Limit::Output });
    // Audience roles cost their names.
    let roles = w::Annotations { audience: vec![w::Role::Assistant; 200_000], priority: None, last_modified: None };
    let block = w::ContentBlock::Text(w::TextContent { text: String::new(), annotations: Some(roles), meta: None });
    assert_eq!(call_result(call(vec![block]), &mut Budget::new(limit)).expect_err("refused"), PluginError::Limit { limit: crate::plugin::Limit::Output });
}

#[test]
fn a_result_passes_exactly_when_it_fits_the_limit() {
    let empty = || w::ContentBlock::Text(w::TextContent { text: String::new(), annotations: None, meta: None });
    for blocks in [0, 1, 2, 10, 1000, 40_000, 41_000] {
        let content: Vec<_> = std::iter::repeat_with(empty).take(blocks).chain(every_block()).collect();
        let sent = wire_len(&call_result(call(content.clone()), &mut Budget::new(u64::MAX)).expect("converts"));
        for limit in [sent - sent / 10, sent - 1, sent, sent + 64, 1 << 20] {
            if let Ok(result) = call_result(call(content.clone()), &mut Budget::new(limit)) {
                assert!(wire_len(&result) <= limit, "{blocks} blocks: {} bytes passed a limit of {limit}", wire_len(&result));
            }
        }
        let refused = call_result(call(content.clone()), &mut Budget::new(sent - 1));
        assert_eq!(refused.expect_err("one byte short"), PluginError::Limit { limit: crate::plugin::Limit::Output });
        call_result(call(content), &mut Budget::new(sent)).expect("a result exactly at the limit passes");
    }
}

mod shapes {
    //! Random results, with text drawn from every character (controls included).
    use proptest::prelude::*;

    use super::*;

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter)
    }

    fn json_text() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "{}",
            r#"{ "a" : [1e15, 1E2, -0, 0.5e1, 12345678901234567890123] }"#,
            r#"{"s":"\u00e9\/\u001f","t":true,"n":null,"a":{"a":{}}}"#,
            r#"{"k":1,"k":22}"#,
        ])
        .prop_map(str::to_owned)
    }

    fn role() -> impl Strategy<Value = w::Role> {
        prop_oneof![Just(w::Role::User), Just(w::Role::Assistant)]
    }

    fn annotations() -> impl Strategy<Value = Option<w::Annotations>> {
        prop::option::of((prop::collection::vec(role(), 0..3), prop::option::of(any::<f64>()), prop::option::of(text())))
            .prop_map(|a| a.map(|(audience, priority, last_modified)| w::Annotations { audience, priority, last_modified }))
    }

    fn icon() -> impl Strategy<Value = w::Icon> {
        (text(), prop::option::of(text()), prop::collection::vec(text(), 0..3), prop::option::of(text())).prop_map(|(src, mime_type, sizes, theme)| w::Icon {
            src,
            mime_type,
            sizes,
            theme,
        })
    }

    fn contents() -> impl Strategy<Value = w::ResourceContents> {
        let body = prop_oneof![text().prop_map(w::ResourceBody::Text), prop::collection::vec(any::<u8>(), 0..8).prop_map(w::ResourceBody::Blob)];
        (text(), prop::option::of(text()), body, prop::option::of(json_text())).prop_map(|(uri, mime_type, body, meta)| w::ResourceContents {
            uri,
            mime_type,
            body,
            meta,
        })
    }

    fn block() -> impl Strategy<Value = w::ContentBlock> {
        let media = || {
            (prop::collection::vec(any::<u8>(), 0..8), text(), annotations()).prop_map(|(data, mime_type, annotations)| w::MediaContent {
                data,
                mime_type,
                annotations,
                meta: None,
            })
        };
        let link = (
            (text(), text(), prop::option::of(text()), prop::option::of(text()), prop::option::of(text())),
            (prop::option::of(any::<u64>()), prop::collection::vec(icon(), 0..3), annotations()),
        )
            .prop_map(|((uri, name, title, description, mime_type), (size, icons, annotations))| w::ResourceLink {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
                icons,
                annotations,
                meta: None,
            });
        prop_oneof![
            (text(), annotations()).prop_map(|(text, annotations)| w::ContentBlock::Text(w::TextContent { text, annotations, meta: None })),
            media().prop_map(w::ContentBlock::Image),
            media().prop_map(w::ContentBlock::Audio),
            link.prop_map(w::ContentBlock::ResourceLink),
            (contents(), annotations()).prop_map(|(resource, annotations)| w::ContentBlock::Resource(w::EmbeddedResource {
                resource,
                annotations,
                meta: None
            })),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn a_call_result_is_charged_exactly_its_wire_size(
            content in prop::collection::vec(block(), 0..5),
            structured in prop::option::of(json_text()),
            is_error in any::<bool>(),
            meta in prop::option::of(json_text()),
        ) {
            let mut budget = Budget::new(u64::MAX);
            let result = call_result(wt::CallResult { content, structured_content: structured, is_error, meta }, &mut budget)
                .expect("converts");
            prop_assert_eq!(wire_len(&result), budget.spent());
        }

        #[test]
        fn a_prompt_and_a_completion_are_charged_exactly_their_wire_size(
            description in prop::option::of(text()),
            messages in prop::collection::vec((role(), block()), 0..4),
            values in prop::collection::vec(text(), 0..120),
            total in prop::option::of(any::<u32>()),
            has_more in any::<bool>(),
        ) {
            let messages = messages.into_iter().map(|(role, content)| wp::PromptMessage { role, content }).collect();
            let mut budget = Budget::new(u64::MAX);
            let prompt = prompt_result(wp::PromptResult { description, messages, meta: None }, &mut budget).expect("converts");
            prop_assert_eq!(wire_len(&prompt), budget.spent());
            let mut budget = Budget::new(u64::MAX);
            let done = completion(wc::CompletionResult { values, total, has_more }, &mut budget).expect("converts");
            prop_assert_eq!(wire_len(&done), budget.spent());
        }
    }
}

#[test]
fn the_lift_fuel_table_names_the_smallest_wire_form_of_each_list_element() {
    let separator = 1;
    let contents = |text: Option<&str>, blob: Option<&str>| ResourceContents {
        uri: String::new(),
        mime_type: None,
        text: text.map(str::to_owned),
        blob: blob.map(str::to_owned),
        meta: None,
    };
    let smallest = [
        wire_len(&ContentBlock::text("")),
        wire_len(&PromptMessage { role: Role::User, content: ContentBlock::text("") }),
        wire_len(&contents(Some(""), None)).min(wire_len(&contents(None, Some("")))),
        wire_len(&Icon { src: String::new(), mime_type: None, sizes: vec![], theme: None }),
        wire_len(&String::new()),
        wire_len(&Role::User),
    ];
    for ((_, table), smallest) in LISTS.iter().zip(smallest) {
        assert_eq!(*table as u64, smallest + separator);
    }
    // Lifting a result never needs more fuel per byte than this; a small number keeps the
    // fuel of the largest output limit within reason.
    assert!((1..=16).contains(&LIFT_FUEL_PER_OUTPUT_BYTE), "{LIFT_FUEL_PER_OUTPUT_BYTE}");
}

#[test]
fn media_is_base64_and_json_is_checked() {
    let mut budget = Budget::new(1 << 20);
    let block = w::ContentBlock::Image(w::MediaContent { data: vec![0, 1, 2, 255], mime_type: "image/png".into(), annotations: None, meta: None });
    let ContentBlock::Image { data, .. } = content_block(block, &mut budget).expect("ok") else { panic!("not an image") };
    assert_eq!(data, "AAEC/w==");
    let max = usize::MAX;
    assert!(json("{\"a\":1}".into(), JsonKind::Object, "x", max, &mut budget).is_ok());
    assert!(matches!(json("[1]".into(), JsonKind::Object, "x", max, &mut budget), Err(PluginError::MalformedOutput(_))));
    assert!(matches!(json("{nope".into(), JsonKind::Object, "x", max, &mut budget), Err(PluginError::MalformedOutput(_))));
    assert!(json("[1]".into(), JsonKind::Any, "x", max, &mut budget).is_ok());
}

fn result(structured: Option<String>, meta: Option<String>) -> wt::CallResult {
    wt::CallResult { content: vec![], structured_content: structured, is_error: false, meta }
}

#[test]
fn an_unserializable_call_result_is_malformed_output_naming_the_field() {
    let deep = format!("{}{}", "{\"a\":".repeat(2000), "}".repeat(2000));
    for (r, expected) in [
        (result(Some(deep.clone()), None), "structured content nests deeper than 64 levels"),
        (result(Some(r#"{"s":"\ud800"}"#.into()), None), "structured content has a lone surrogate escape `\\ud800`"),
        (result(None, Some(deep)), "result `_meta` nests deeper than 64 levels"),
        (result(None, Some(r#"{"n":1e400}"#.into())), "result `_meta` is not valid JSON: number out of range"),
    ] {
        match call_result(r, &mut Budget::new(1 << 20)) {
            Err(PluginError::MalformedOutput(message)) => assert!(message.starts_with(expected), "{message}"),
            other => panic!("expected malformed output, got {other:?}"),
        }
    }
    let fine = call_result(result(Some(r#"{"s":"\ud83d\ude00"}"#.into()), None), &mut Budget::new(1 << 20)).expect("valid");
    let line = serde_json::to_value(&fine).expect("serializes").to_string();
    assert!(line.contains("😀"), "{line}");
}

#[test]
fn an_unserializable_resource_meta_is_malformed_output() {
    let contents =
        w::ResourceContents { uri: "x://y".into(), mime_type: None, body: w::ResourceBody::Text("t".into()), meta: Some(r#"{"s":"\udfff"}"#.into()) };
    let Err(PluginError::MalformedOutput(message)) = resource_contents(contents, &mut Budget::new(1 << 20)) else {
        panic!("a lone surrogate in `_meta` was accepted")
    };
    assert!(message.starts_with("resource `_meta` has a lone surrogate escape `\\udfff`"), "{message}");
}

#[test]
fn escapes_are_counted_as_serde_json_writes_them_for_every_ascii_byte() {
    for byte in 0u8..0x80 {
        let text = char::from(byte).to_string().repeat(3);
        let written = serde_json::to_string(&text).expect("serializes").len();
        assert_eq!(text.len() + 2 + escapes(&text), written, "byte {byte:#04x}");
    }
}

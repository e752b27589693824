//! Every form of a secret is found, and pieces of one at the edge of a cut.

#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

/// A secret with every character that encodes differently somewhere.
const SECRET: &str = "p\"a/ss\\w rd+é?";

fn scrubber() -> Scrubber {
    Scrubber::new(&[SECRET.to_owned()])
}

#[test]
fn every_encoded_form_is_redacted() {
    let json = serde_json::to_string(SECRET).unwrap();
    let samples = [
        SECRET.to_owned(),
        json.trim_matches('"').to_owned(),
        json.trim_matches('"').replace('/', "\\/"),
        "p\\\"a\\/ss\\\\w rd+\\u00e9?".to_owned(),
        "p%22a%2Fss%5Cw%20rd%2B%C3%A9%3F".to_owned(),
        "p%22a%2fss%5cw+rd%2b%c3%a9%3f".to_owned(),
        "p%22a/ss%5Cw%20rd%2B%C3%A9%3F".to_owned(),
        STANDARD.encode(SECRET),
        URL_SAFE_NO_PAD.encode(SECRET),
        // Inside a Basic authorisation at each of the three alignments.
        STANDARD.encode(format!("u:{SECRET}")),
        STANDARD.encode(format!("us:{SECRET}")),
        STANDARD.encode(format!("use:{SECRET}")),
    ];
    for sample in samples {
        let out = scrubber().text(&format!("<{sample}>"));
        assert!(!out.contains(&sample), "{sample} survived: {out}");
        assert!(out.contains(REDACTED), "{sample}: {out}");
    }
    assert_eq!(scrubber().text(&format!("a {SECRET} b")), "a [redacted] b");
    assert_eq!(
        scrubber().text(&STANDARD.encode(SECRET)),
        REDACTED,
        "a padded form is redacted whole"
    );
}

#[test]
fn json_keys_strings_and_numbers_are_scrubbed() {
    let s = Scrubber::new(&["s3cret".to_owned(), "424242".to_owned()]);
    let value =
        json!({"s3cret": ["x s3cret", {"n": 4242421, "ok": 7, "b": true}], "h": "czNjcmV0"});
    assert_eq!(
        s.json(value),
        json!({"[redacted]": ["x [redacted]", {"n": "[redacted]1", "ok": 7, "b": true}], "h": "[redacted]"})
    );
}

#[test]
fn pieces_of_a_secret_at_a_cut_are_redacted() {
    let s = Scrubber::new(&["abcdefgh".to_owned()]);
    assert_eq!(s.text_cut_at_end("body: abcdefg"), "body: [redacted]");
    assert_eq!(s.text_cut_at_end("body: ab"), "body: ab");
    assert_eq!(
        s.text_cut_at("x abcde\n[cut]\nfgh y", "\n[cut]\n"),
        "x [redacted]\n[cut]\n[redacted] y"
    );
    assert_eq!(
        s.text_cut_at("abcdefgh no marker", "\n[cut]\n"),
        "[redacted] no marker"
    );
}

#[test]
fn errors_are_scrubbed_and_no_secrets_change_nothing() {
    let err = scrubber().error(ToolError::failed(format!("HTTP 403: {SECRET}")));
    assert_eq!(err.to_string(), "HTTP 403: [redacted]");
    let none = Scrubber::new(&[String::new()]);
    assert_eq!(none.text("anything"), "anything");
    assert_eq!(none.json(json!({"a": 1})), json!({"a": 1}));
}

use std::time::Duration;

use super::*;

fn parse(tokens: proc_macro2::TokenStream) -> syn::Result<ToolArgs> {
    let mut args = ToolArgs::default();
    syn::parse::Parser::parse2(syn::meta::parser(|meta| args.parse_item(meta)), tokens)?;
    Ok(args)
}

#[test]
fn durations_take_a_positive_integer_and_a_unit() {
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    for bad in ["", "30", "s", "1.5s", "-1s", "10 days", "30sec"] {
        let err = parse_duration(bad).unwrap_err();
        assert!(err.contains("like \"500ms\""), "{bad}: {err}");
    }
    assert_eq!(
        parse_duration("0s").unwrap_err(),
        "invalid timeout \"0s\": must be greater than zero"
    );
}

#[test]
fn names_and_tags_follow_the_core_rules() {
    assert!(check_name("file_read-2", "tool name").is_ok());
    assert!(check_name("github.create_issue", "tool name").is_ok());
    assert_eq!(
        check_name("file,read", "tool name").unwrap_err(),
        "invalid tool name \"file,read\": has ',' at byte 4; control characters and ',' are not allowed"
    );
    assert!(
        check_name(&"x".repeat(129), "tool name")
            .unwrap_err()
            .contains("129 bytes")
    );
    assert!(check_tag("mcp:github").is_ok());
    assert_eq!(
        check_tag("bad tag").unwrap_err(),
        "invalid tag \"bad tag\": has ' ' at byte 3; only ASCII letters, digits, '_' and '-' are allowed"
    );
}

#[test]
fn every_key_parses() {
    let args = parse(quote::quote! {
        name = "x", description = " d ", tags("a", "b:c"), timeout = "2m", retries = 3,
        version = "2.0.0", mutating, needs_approval = false, parallel = true, cacheable,
        max_output = 100, overflow = "spill", kind = "meta", discover = false, crate = "::tb"
    })
    .unwrap();
    assert_eq!(args.name.as_deref(), Some("x"));
    assert_eq!(args.description.as_deref(), Some("d"));
    assert_eq!(args.tags, ["a", "b:c"]);
    assert_eq!(args.timeout, Some(Duration::from_secs(120)));
    assert_eq!(
        (args.retries, args.version.as_deref()),
        (Some(3), Some("2.0.0"))
    );
    assert_eq!(args.effect, Some(Effect::Mutating));
    assert_eq!(
        (args.needs_approval, args.parallel, args.cacheable),
        (Some(false), Some(true), Some(true))
    );
    assert_eq!(
        (args.max_output, args.overflow, args.kind),
        (Some(100), Some(Overflow::Spill), Some(Kind::Meta))
    );
    assert_eq!(args.discover, Some(false));
    assert!(args.crate_path.is_some());
}

#[test]
fn bad_keys_and_values_are_named() {
    let msg = |tokens| {
        parse(tokens)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(
        msg(quote::quote!(nmae = "x"))
            .starts_with("unknown #[tool] argument `nmae`; expected one of: name,")
    );
    assert_eq!(
        msg(quote::quote!(retries = 1, retries = 2)),
        "duplicate `retries` in #[tool(...)]"
    );
    assert_eq!(
        msg(quote::quote!(read_only, mutating)),
        "`mutating` and `read_only` exclude each other; keep one"
    );
    assert!(
        msg(quote::quote!(overflow = "drop"))
            .contains("expected \"truncate\", \"spill\" or \"fail\"")
    );
    assert!(
        msg(quote::quote!(parallel)).contains("expected `parallel = true` or `parallel = false`")
    );
    assert!(msg(quote::quote!(max_output = 0)).contains("positive number of bytes"));
}

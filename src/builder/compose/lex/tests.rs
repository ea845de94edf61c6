use super::*;

fn vars() -> BTreeMap<String, String> {
    [("A", "1"), ("PATH", "C:\\bin"), ("EMPTY", "")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into()
}

/// (word as written, escape, value as Docker's lexer gives it).
#[test]
fn words_read_quotes_escapes_and_variables_in_one_pass() {
    let cases: [(&str, char, &str); 24] = [
        ("$A", '\\', "1"),
        ("${A}x", '\\', "1x"),
        ("$Ax", '\\', ""),
        ("C:\\\\app;${PATH}", '\\', "C:\\app;C:\\bin"),
        ("$", '\\', "$"),
        ("cost $ 5", '\\', "cost $ 5"),
        ("${UNSET}-", '\\', "-"),
        // An escaped dollar is a dollar, not an expansion.
        ("\\$A", '\\', "$A"),
        ("\"\\$A\"", '\\', "$A"),
        ("'$A'", '\\', "$A"),
        ("\"$A b\"", '\\', "1 b"),
        ("${UNSET:-C:\\\\default}", '\\', "C:\\default"),
        ("${EMPTY:-d}", '\\', "d"),
        ("${EMPTY-d}", '\\', ""),
        ("${A:-d}", '\\', "1"),
        ("${A:+alt}", '\\', "alt"),
        ("${EMPTY:+alt}", '\\', ""),
        ("${EMPTY+alt}", '\\', "alt"),
        ("${UNSET:-$A}", '\\', "1"),
        ("\"C:\\app\"", '\\', "C:\\app"),
        ("C:\\app", '`', "C:\\app"),
        ("a` b", '`', "a b"),
        ("\"say \\\"hi\\\"\"", '\\', "say \"hi\""),
        ("x   y", '\\', "x   y"),
    ];
    for (input, escape, want) in cases {
        assert_eq!(word(input, escape, &vars()).as_deref(), Ok(want), "{input}");
    }
}

#[test]
fn forms_docker_has_and_imgcheck_does_not_expand_are_errors() {
    let cases: [(&str, LexError); 6] = [
        (
            "${A:?unset}",
            LexError::Unsupported("A".into(), ":?".into()),
        ),
        ("${A#pre}", LexError::Unsupported("A".into(), "#".into())),
        ("${A%suf}", LexError::Unsupported("A".into(), "%".into())),
        ("${A/x/y}", LexError::Unsupported("A".into(), "/".into())),
        ("${A", LexError::Brace),
        ("\"open", LexError::Unterminated('"')),
    ];
    for (input, want) in cases {
        assert_eq!(word(input, '\\', &vars()), Err(want), "{input}");
    }
    assert_eq!(
        LexError::Unsupported("A".into(), ":?".into()).to_string(),
        "'${A…}' uses ':?', which imgcheck does not expand"
    );
}

#[test]
fn split_keeps_words_as_written() {
    let cases: [(&str, char, &[&str]); 4] = [
        (
            "A=1 B=\"two words\" C='x y'",
            '\\',
            &["A=1", "B=\"two words\"", "C='x y'"],
        ),
        (r"Q=a\ b R=\$X", '\\', &[r"Q=a\ b", r"R=\$X"]),
        (r"P=C:\app Q=a` b", '`', &[r"P=C:\app", "Q=a` b"]),
        ("  ", '\\', &[]),
    ];
    for (input, escape, want) in cases {
        assert_eq!(split(input, escape), want, "{input}");
    }
}

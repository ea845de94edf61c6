use super::*;

const BASE: &str = "reg.example/windows/nanoserver:ltsc2022";

fn args() -> Vec<(String, String)> {
    vec![
        ("WINDOWS_BASE".into(), BASE.into()),
        ("TARGETARCH".into(), "amd64".into()),
    ]
}

fn file(windows_stage: &str) -> String {
    format!(
        "ARG BUILDER=golang\nARG WINDOWS_BASE\nFROM --platform=linux/amd64 ${{BUILDER}} AS builder\n\
         RUN go build -o /out/app.exe .\n\nFROM ${{WINDOWS_BASE}}\n{windows_stage}"
    )
}

/// One row per instruction kind: composed, or the reason it is not.
#[test]
fn each_instruction_kind_is_composed_or_says_why_not() {
    let cases: [(&str, Option<&str>); 22] = [
        ("COPY --from=builder /out/app.exe /app.exe\n", None),
        ("COPY --from=0 /out/app.exe /app.exe\n", None),
        ("COPY app.exe /app.exe\n", None),
        ("COPY [\"a b.exe\", \"/app/\"]\n", None),
        ("COPY --chown=1:1 app.exe /app.exe\n", None),
        ("ADD app.exe /app.exe\n", None),
        ("ENV A=1 B=\"two words\"\n", None),
        ("ENV A 1\n", None),
        ("USER ContainerUser\n", None),
        ("ENTRYPOINT [\"/app.exe\"]\n", None),
        ("CMD app.exe --serve\n", None),
        ("LABEL a=b\n", None),
        ("WORKDIR /app\n", None),
        ("ARG TARGETARCH\n", None),
        (
            "RUN echo hi\n",
            Some("RUN at line 7: a command must run in the stage"),
        ),
        (
            "EXPOSE 80\n",
            Some("EXPOSE at line 7: EXPOSE is not composed"),
        ),
        (
            "SHELL [\"powershell\"]\n",
            Some("SHELL at line 7: SHELL is not composed"),
        ),
        (
            "ADD https://example.com/a.zip /a.zip\n",
            Some("ADD at line 7 fetches https://example.com/a.zip"),
        ),
        (
            "ADD tools.tar.gz /tools/\n",
            Some("ADD at line 7 may unpack the archive tools.tar.gz"),
        ),
        (
            "COPY --from=mcr.microsoft.com/windows/servercore:ltsc2022 /x /x\n",
            Some(
                "COPY at line 7 copies from 'mcr.microsoft.com/windows/servercore:ltsc2022', \
                 not an earlier Linux stage",
            ),
        ),
        (
            "COPY <<EOF /a.txt\nhello\nEOF\n",
            Some("COPY at line 7 has a heredoc"),
        ),
        (
            "LABEL novalue\n",
            Some("LABEL at line 7: 'novalue' is not NAME=VALUE"),
        ),
    ];
    for (stage, want) in cases {
        let got = match decide(&file(stage), BASE, &args()) {
            Decision::Compose(_) => None,
            Decision::Buildah(why) => Some(why),
        };
        assert_eq!(got.as_deref(), want, "{stage}");
    }
}

#[test]
fn the_stage_must_be_from_the_planned_base_with_no_windows_stage_before() {
    let other = decide(&file("COPY a /a\n"), "reg.example/other:1", &args());
    assert_eq!(
        other,
        Decision::Buildah(format!(
            "the last stage is FROM {BASE}, not the planned base reg.example/other:1"
        ))
    );
    let text = format!(
        "FROM {BASE} AS cache\nFROM golang AS builder\nFROM {BASE}\nCOPY --from=cache /a /a\n"
    );
    assert_eq!(
        decide(&text, BASE, &args()),
        Decision::Buildah(
            "the Windows stage at line 1 comes before the last one (Buildah would pull its base)"
                .into()
        )
    );
}

#[test]
fn the_files_stage_keeps_the_stages_before_and_the_copies_on_scratch() {
    let stage = "ARG TARGETARCH\nCOPY --from=builder /out/app-${TARGETARCH}.exe /app.exe\n\
                 WORKDIR /data\nUSER ContainerUser\nENV MODE=node\nENTRYPOINT [\"/app.exe\"]\n";
    let Decision::Compose(plan) = decide(&file(stage), BASE, &args()) else {
        panic!("not composed");
    };
    assert_eq!(
        plan.files_containerfile,
        "ARG BUILDER=golang\nARG WINDOWS_BASE\nFROM --platform=linux/amd64 ${BUILDER} AS builder\n\
         RUN go build -o /out/app.exe .\n\n\
         # The files of the Windows stage (line 6), composed by imgcheck\nFROM scratch\n\
         ARG TARGETARCH\nCOPY --from=builder /out/app-${TARGETARCH}.exe /app.exe\n\
         WORKDIR /data\nENV MODE=node\n"
    );
    assert_eq!(
        plan.edits,
        [
            Edit::Workdir("/data".into()),
            Edit::User("ContainerUser".into()),
            Edit::Env(vec![("MODE".into(), "node".into())]),
            Edit::Entrypoint(vec!["/app.exe".into()]),
        ]
    );
    assert_eq!(plan.args["TARGETARCH"], "amd64");
    assert!(
        plan.created_by
            .starts_with("ARG TARGETARCH; COPY --from=builder")
    );
}

#[test]
fn variables_expand_like_a_containerfile() {
    let vars: BTreeMap<String, String> = [("A", "1"), ("PATH", "C:\\bin")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    let cases = [
        ("$A", "1"),
        ("${A}x", "1x"),
        ("$Ax", ""),
        ("C:\\app;${PATH}", "C:\\app;C:\\bin"),
        ("$", "$"),
        ("cost $ 5", "cost $ 5"),
        ("${UNSET}-", "-"),
    ];
    for (input, want) in cases {
        assert_eq!(expand(input, &vars), want, "{input}");
    }
    let cases: [(&str, char, &[&str]); 6] = [
        (
            "A=1 B=\"two words\" C='x y'",
            '\\',
            &["A=1", "B=two words", "C=x y"],
        ),
        (r#"P="C:\app;$P" Q=a\ b"#, '\\', &[r"P=C:\app;$P", "Q=a b"]),
        (
            r#"P="say \"hi\"" R='C:\x'"#,
            '\\',
            &[r#"P=say "hi""#, r"R=C:\x"],
        ),
        (r"P=C:\app", '\\', &["P=C:app"]),
        (r"P=C:\app Q=a` b", '`', &[r"P=C:\app", "Q=a b"]),
        (r#"P="C:\app ``""#, '`', &[r"P=C:\app `"]),
    ];
    for (input, escape, want) in cases {
        assert_eq!(words(input, escape), want, "{input}");
    }
    let text = "# escape=`\nFROM base\nENV P=\"C:\\app\" Q=1\nLABEL a=C:\\x\n";
    let Decision::Compose(plan) = decide(text, "base", &[]) else {
        panic!("not composed");
    };
    let s = |v: &str| v.to_string();
    assert_eq!(
        plan.edits,
        [
            Edit::Env(vec![(s("P"), s(r"C:\app")), (s("Q"), s("1"))]),
            Edit::Labels(vec![(s("a"), s(r"C:\x"))])
        ]
    );
    assert_eq!(
        command("app.exe --serve"),
        ["cmd", "/S", "/C", "app.exe --serve"]
    );
}

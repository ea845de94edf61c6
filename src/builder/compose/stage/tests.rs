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
    let cases: [(&str, Option<&str>); 23] = [
        ("COPY --from=builder /out/app.exe /app.exe\n", None),
        ("COPY --from=0 /out/app.exe /app.exe\n", None),
        ("COPY app.exe /app.exe\n", None),
        ("COPY [\"a b.exe\", \"/app/\"]\n", None),
        ("COPY app.exe C:/app/\n", None),
        ("ADD app.exe /app.exe\n", None),
        ("ENV A=1 B=\"two words\"\n", None),
        ("ENV A 1\n", None),
        ("ENV A=\\$B\n", None),
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

/// Copies Docker on Windows reads otherwise than a Linux `COPY`, and words imgcheck does not
/// read as Docker does: not composed, each with its reason.
#[test]
fn copies_and_words_docker_on_windows_reads_otherwise_are_not_composed() {
    let cases: [(&str, &str); 6] = [
        (
            "COPY --chown=1:1 app.exe /app.exe\n",
            "COPY at line 7 has --chown: on Windows it names the owner in the file's security \
                 descriptor, which imgcheck writes fixed",
        ),
        (
            "COPY --chmod=755 app.exe /app.exe\n",
            "COPY at line 7 has --chmod: Windows files have no mode bits; their access is the \
                 security descriptor",
        ),
        (
            "COPY app.exe app.exe\n",
            "COPY at line 7: 'app.exe' is relative, and the stage sets no WORKDIR before it \
                 (the base's decides)",
        ),
        (
            "COPY app.exe D:/app/\n",
            "COPY at line 7: 'D:/app/' is on drive D:, and a Windows container has only C:",
        ),
        ("ENV A\n", "ENV at line 7: 'A' has no value"),
        (
            "ENV A=${B:?required}\n",
            "ENV at line 7: '${B:?required}': '${B…}' uses ':?', which imgcheck does not expand",
        ),
    ];
    for (stage, want) in cases {
        let got = decide(&file(stage), BASE, &args());
        assert_eq!(got, Decision::Buildah(want.into()), "{stage}");
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
            Edit::Entrypoint(StageCommand::Exec(vec!["/app.exe".into()])),
        ]
    );
    assert_eq!(plan.args["TARGETARCH"], "amd64");
    assert_eq!(
        plan.steps[0],
        HistoryStep {
            text: "COPY --from=builder /out/app-${TARGETARCH}.exe /app.exe".into(),
            files: true
        }
    );
    assert_eq!(plan.steps.len(), 5);
}

/// Destinations and WORKDIRs written as Windows paths are written into the files stage as the
/// Linux paths the layer writer puts under `Files/` (`C:\csi\` → `/csi/` → `Files/csi/`), as
/// Docker on Windows places them; a relative one joins the stage's WORKDIR.
#[test]
fn windows_destinations_become_the_paths_under_files() {
    // Containerfile text (the default escape `\`: `\\` is one backslash).
    let cases: [(&str, &str); 9] = [
        (r"COPY a.exe C:\\csi\\a.exe", "COPY a.exe /csi/a.exe"),
        ("COPY a.exe c:/csi/", "COPY a.exe /csi/"),
        ("COPY a.exe /csi/", "COPY a.exe /csi/"),
        (r"COPY a.exe \\csi\\a.exe", "COPY a.exe /csi/a.exe"),
        (
            "WORKDIR C:\\\\csi\nCOPY a.exe csi.exe",
            "WORKDIR /csi\nCOPY a.exe /csi/csi.exe",
        ),
        (
            "WORKDIR C:\\\\csi\nWORKDIR bin\nCOPY a.exe .",
            "WORKDIR /csi\nWORKDIR /csi/bin\nCOPY a.exe /csi/bin/",
        ),
        (
            r#"COPY ["a b.exe", "C:\\Program Files\\x\\"]"#,
            r#"COPY ["a b.exe","/Program Files/x/"]"#,
        ),
        (
            "ARG DIR=C:/tools\nCOPY --from=builder a.exe ${DIR}/",
            "ARG DIR=C:/tools\nCOPY --from=builder a.exe /tools/",
        ),
        (
            "ENV D=\"C:\\\\my app\"\nCOPY a.exe ${D}/",
            "ENV D=\"C:\\\\my app\"\nCOPY a.exe /my\\ app/",
        ),
    ];
    for (stage, want) in cases {
        let Decision::Compose(plan) = decide(&file(&format!("{stage}\n")), BASE, &args()) else {
            panic!("not composed: {stage}");
        };
        let files = plan
            .files_containerfile
            .split_once("FROM scratch\n")
            .map(|(_, f)| f.trim_end())
            .unwrap_or_default()
            .to_string();
        assert_eq!(files, want, "{stage}");
    }
    let base_var = "COPY a.exe $ProgramFiles/\n";
    assert_eq!(
        decide(&file(base_var), BASE, &args()),
        Decision::Buildah(
            "COPY at line 7: '$ProgramFiles/' uses $ProgramFiles, which the stage does not set \
             (the base's config may)"
                .into()
        )
    );
}

/// With the `# escape=` backtick, backslashes are path separators; words are kept as
/// written in the edits and read against the config when applied.
#[test]
fn words_are_kept_as_written_and_read_with_the_escape_directive() {
    let text = "# escape=`\nFROM base\nENV P=\"C:\\app\" Q=1\nLABEL a=C:\\x\nCMD app.exe --serve\n";
    let Decision::Compose(plan) = decide(text, "base", &[]) else {
        panic!("not composed");
    };
    let s = |v: &str| v.to_string();
    assert_eq!(plan.escape, '`');
    assert_eq!(
        plan.edits,
        [
            Edit::Env(vec![(s("P"), s("\"C:\\app\"")), (s("Q"), s("1"))]),
            Edit::Labels(vec![(s("a"), s(r"C:\x"))]),
            Edit::Cmd(StageCommand::Shell(s("app.exe --serve"))),
        ]
    );
    let base = serde_json::json!({"config": {}, "rootfs": {"diff_ids": []}});
    let added = crate::builder::compose::config::Added {
        diff_id: crate::digest::Digest::sha256(b""),
        created: 0,
        os_version: None,
    };
    let config = crate::builder::compose::config::compose_config(base, &plan, &added).unwrap();
    assert_eq!(
        config["config"]["Env"],
        serde_json::json!([r"P=C:\app", "Q=1"])
    );
    assert_eq!(config["config"]["Labels"]["a"], r"C:\x");
}

use super::*;

/// (as written, current WORKDIR, where it lands in the files stage, the layer entry, Windows).
/// What Docker on Windows does with each (moby `normalizeWorkdirWindows`, and the copy
/// destinations of a Windows build): `C:\csi\`, `/csi/` and `\csi\` are one directory.
#[test]
fn destinations_land_where_docker_on_windows_puts_them() {
    let cases: [(&str, Option<&str>, &str, &str); 14] = [
        ("C:\\csi\\", None, "/csi/", "C:\\csi"),
        ("c:\\csi\\", None, "/csi/", "C:\\csi"),
        ("C:/csi/", None, "/csi/", "C:\\csi"),
        ("/csi/", None, "/csi/", "C:\\csi"),
        ("\\csi\\", None, "/csi/", "C:\\csi"),
        ("C:\\csi.exe", None, "/csi.exe", "C:\\csi.exe"),
        ("/csi.exe", None, "/csi.exe", "C:\\csi.exe"),
        ("csi.exe", Some("/app"), "/app/csi.exe", "C:\\app\\csi.exe"),
        ("csi.exe", Some("/"), "/csi.exe", "C:\\csi.exe"),
        (".", Some("/app"), "/app/", "C:\\app"),
        ("bin\\", Some("/app/"), "/app/bin/", "C:\\app\\bin"),
        ("..\\x", Some("/app"), "/x", "C:\\x"),
        ("C:\\..\\..\\x", None, "/x", "C:\\x"),
        ("C:\\", None, "/", "C:\\"),
    ];
    for (path, cwd, root, windows) in cases {
        assert_eq!(to_root(path, cwd).as_deref(), Ok(root), "{path} in {cwd:?}");
        assert_eq!(to_windows(root), windows, "{root}");
    }
}

#[test]
fn paths_a_windows_container_cannot_hold_or_imgcheck_cannot_place_are_errors() {
    let cases: [(&str, Option<&str>, &str); 3] = [
        (
            "D:\\data\\",
            None,
            "'D:\\data\\' is on drive D:, and a Windows container has only C:",
        ),
        (
            "C:app",
            Some("/"),
            "'C:app' is relative to a drive's current directory (write C:\\app)",
        ),
        (
            "csi.exe",
            None,
            "'csi.exe' is relative, and the stage sets no WORKDIR before it (the base's decides)",
        ),
    ];
    for (path, cwd, want) in cases {
        let got = to_root(path, cwd).map_err(|e| e.to_string());
        assert_eq!(got, Err(want.to_string()), "{path}");
    }
}

//! What a scan keeps of a real tar stream.

use super::*;

type TarEntry<'a> = (&'a str, tar::EntryType, &'a [u8], Option<&'a str>);

fn tar(entries: &[TarEntry<'_>]) -> Vec<u8> {
    let modes: Vec<(TarEntry<'_>, u32)> = entries.iter().map(|e| (*e, 0o755)).collect();
    tar_with_modes(&modes)
}

fn tar_with_modes(entries: &[(TarEntry<'_>, u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for ((name, kind, data, link), mode) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        if let Some(link) = link {
            h.set_link_name(link).unwrap();
        }
        b.append_data(&mut h, name, *data).unwrap();
    }
    b.into_inner().unwrap()
}

fn limits() -> Limits {
    Limits::for_compressed_size(0)
}

/// An ELF64 header for x86-64 (gABI "ELF Header": class 2, data 1, version 1, e_type 2,
/// e_machine 62, e_ehsize 64), 64 bytes.
fn elf_head() -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    h[16] = 2;
    h[18] = 62;
    h[20] = 1;
    h[52] = 64;
    h
}

/// Every entry but the root's: directories (a directory replaces a file or link below it),
/// devices and FIFOs (no program), links, whiteouts, and each file's mode (its execute
/// bits decide whether `execve` may run it).
#[test]
fn a_linux_layer_keeps_links_whiteouts_and_probes_targets() {
    use tar::EntryType::{Directory, Fifo, Regular, Symlink};
    let elf = elf_head();
    let layer = tar_with_modes(&[
        (("./", Directory, b"", None), 0o755),
        (("usr/", Directory, b"", None), 0o755),
        (("bin", Symlink, b"", Some("usr/bin")), 0o777),
        (("usr/bin/driver", Regular, &elf[..], None), 0o755),
        (("usr/bin/other", Regular, &elf[..], None), 0o644),
        (("run/fifo", Fifo, b"", None), 0o600),
        (("opt/.wh.old", Regular, b"", None), 0o644),
        (("etc/.wh..wh..opq", Regular, b"", None), 0o644),
    ]);
    let targets = Targets {
        windows: false,
        probe: BTreeSet::from(["usr/bin/driver".to_string()]),
        dirs: BTreeSet::new(),
    };
    let scan = scan_linux_layer(&layer[..], limits(), &targets).unwrap();
    let seen: Vec<(&str, &Kind, u32)> = scan
        .seen
        .iter()
        .map(|s| (s.key.as_str(), &s.kind, s.mode))
        .collect();
    assert_eq!(
        seen,
        [
            ("usr", &Kind::Dir, 0o755),
            ("bin", &Kind::Symlink("usr/bin".into()), 0o777),
            ("usr/bin/driver", &Kind::File, 0o755),
            ("usr/bin/other", &Kind::File, 0o644),
            ("run/fifo", &Kind::Special, 0o600),
            ("opt/old", &Kind::Whiteout, 0),
            ("etc", &Kind::Opaque, 0),
        ]
    );
    let probed: Vec<&str> = scan.probed.keys().map(String::as_str).collect();
    assert_eq!(probed, ["usr/bin/driver"]);
    assert!(matches!(
        scan.probed["usr/bin/driver"].format,
        crate::binary::BinaryFormat::Elf(_)
    ));
}

#[test]
fn a_windows_layer_lists_only_the_directories_asked_and_keeps_its_layout_check() {
    use tar::EntryType::Regular;
    let layer = tar(&[
        ("Files/App/Driver.exe", Regular, b"MZ", None),
        ("Files/Windows/System32/NETAPI32.DLL", Regular, b"MZ", None),
        ("Files/Windows/WinSxS/x.dll", Regular, b"MZ", None),
        ("Hives/SOFTWARE_BASE", Regular, b"x", None),
    ]);
    let targets = Targets {
        windows: true,
        probe: BTreeSet::from(["app/driver.exe".to_string()]),
        dirs: BTreeSet::from(["windows/system32".to_string(), "app".to_string()]),
    };
    let (format, scan) = scan_windows_layer(&layer[..], limits(), &targets);
    assert_eq!(format, LayerFormat::Windows);
    let seen: Vec<&str> = scan.seen.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(seen, ["app/driver.exe", "windows/system32/netapi32.dll"]);
    assert!(scan.probed.contains_key("app/driver.exe"));
    // Outside the layout: still counted by the layout check.
    let bad = tar(&[("app/driver.exe", Regular, b"MZ", None)]);
    let (format, scan) = scan_windows_layer(&bad[..], limits(), &targets);
    assert!(
        matches!(format, LayerFormat::NotWindows { outside: 1, .. }),
        "{format:?}"
    );
    assert!(scan.seen.is_empty());
}

#[test]
fn keys_follow_each_platforms_names() {
    let rows = [
        (
            "Files/Windows/System32/CMD.EXE",
            true,
            Some("windows/system32/cmd.exe"),
        ),
        ("Files\\App\\..\\App\\x.exe", true, Some("app/x.exe")),
        ("Hives/x", true, None),
        ("./usr/bin/x", false, Some("usr/bin/x")),
        ("/usr/../bin/x", false, Some("bin/x")),
        ("../x", false, None),
        ("a\\b", false, Some("a\\b")),
    ];
    for (name, windows, want) in rows {
        assert_eq!(entry_key(name, windows).as_deref(), want, "{name}");
    }
}

use std::io::Read;

use super::*;

/// The self-relative security descriptor of a file, byte by byte from its SDDL
/// `O:BAG:SYD:(A;;FA;;;BA)(A;;FA;;;SY)(A;;0x1200a9;;;BU)`.
const FILE_SD_HEX: &str = "\
01000480 14000000 24000000 00000000 34000000
01020000000000052000000020020000
01020000000000052000000020020000
02004c00 03000000
00001800 ff011f00 01020000000000052000000020020000
00001400 ff011f00 010100000000000512000000
00001800 a9001200 01020000000000052000000021020000";

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn security_descriptors_encode_their_sddl() {
    let file = hex(FILE_SD_HEX);
    assert_eq!(security_descriptor(false), file);
    // The directory one differs only in the ACE flags (the byte after each ACE type, at
    // 52 + 8, then +24, +20): OICI (3) on each of the three ACEs.
    let mut dir = file.clone();
    for at in [61, 61 + 24, 61 + 24 + 20] {
        dir[at] = 3;
    }
    assert_eq!(security_descriptor(true), dir);
}

enum In {
    Dir(&'static str),
    File(&'static str, &'static [u8], u64),
    Link(&'static str, &'static str),
    Symlink(&'static str, &'static str),
}

/// A plain (Linux-layout) tar as Buildah before 1.44 writes a COPY layer.
fn linux_tar(entries: &[In]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(1_800_000_000);
        h.set_uid(0);
        h.set_gid(0);
        let (name, data): (&str, &[u8]) = match e {
            In::Dir(n) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                (n, b"")
            }
            In::File(n, d, mtime) => {
                h.set_mode(0o755);
                h.set_mtime(*mtime);
                (n, d)
            }
            In::Link(n, to) | In::Symlink(n, to) => {
                let kind = if matches!(e, In::Link(..)) {
                    tar::EntryType::Link
                } else {
                    tar::EntryType::Symlink
                };
                h.set_entry_type(kind);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, n, to).unwrap();
                continue;
            }
        };
        h.set_size(data.len() as u64);
        b.append_data(&mut h, name, data).unwrap();
    }
    b.into_inner().unwrap()
}

/// What one output entry is: name, type, link target, PAX records, mtime, contents.
#[derive(Debug, PartialEq, Eq)]
struct Out {
    name: String,
    kind: char,
    link: Option<String>,
    fileattr: String,
    rawsd: Vec<u8>,
    creation: String,
    mtime: u64,
    data: Vec<u8>,
}

fn read_back(layer: &[u8]) -> Vec<Out> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
    let mut out = Vec::new();
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let mut recs = std::collections::BTreeMap::new();
        for r in e
            .pax_extensions()
            .unwrap()
            .expect("every entry has PAX records")
        {
            let r = r.unwrap();
            recs.insert(r.key().unwrap().to_string(), r.value().unwrap().to_string());
        }
        let keys: Vec<&str> = recs.keys().map(String::as_str).collect();
        assert!(
            keys.iter().all(|k| [
                PAX_CREATIONTIME,
                PAX_FILEATTR,
                PAX_RAWSD,
                "path",
                "linkpath"
            ]
            .contains(k)),
            "{keys:?}"
        );
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        out.push(Out {
            name: e.path().unwrap().display().to_string(),
            kind: char::from(e.header().entry_type().as_byte()),
            link: e.link_name().unwrap().map(|l| l.display().to_string()),
            fileattr: recs[PAX_FILEATTR].clone(),
            rawsd: base64::engine::general_purpose::STANDARD
                .decode(&recs[PAX_RAWSD])
                .unwrap(),
            creation: recs[PAX_CREATIONTIME].clone(),
            mtime: e.header().mtime().unwrap(),
            data,
        });
    }
    out
}

const LONG: &str = "a-directory-name-that-is-long/and-another-one-that-is-longer-still/\
                    and-a-third-to-pass-the-ustar-limits-of-one-hundred-and-fifty-five/csi.exe";

/// What Buildah 1.44 writes for a COPY layer of a Windows stage, one row per entry:
/// (name, tar type, link, fileattr, directory descriptor?, time, contents).
#[allow(clippy::type_complexity)]
const WHAT_1_44_WRITES: [(&str, char, Option<&str>, &str, bool, u64, &[u8]); 8] = [
    ("Hives/", '5', None, "16", true, 1_700_000_000, b""),
    ("Files/", '5', None, "16", true, 1_700_000_000, b""),
    (
        "Files/csi.exe",
        '0',
        None,
        "32",
        false,
        1_600_000_000,
        b"MZ binary",
    ),
    ("Files/dir/", '5', None, "16", true, 1_700_000_000, b""),
    (
        "Files/dir/a.txt",
        '0',
        None,
        "32",
        false,
        1_700_000_000,
        b"a",
    ),
    (
        "Files/dir/b.txt",
        '1',
        Some("Files/dir/a.txt"),
        "32",
        false,
        1_700_000_000,
        b"",
    ),
    (
        "Files/lnk",
        '2',
        Some("csi.exe"),
        "32",
        false,
        1_700_000_000,
        b"",
    ),
    (LONG_OUT, '0', None, "32", false, 1_700_000_000, b"long"),
];

const LONG_OUT: &str = "Files/a-directory-name-that-is-long/and-another-one-that-is-longer-still/\
                        and-a-third-to-pass-the-ustar-limits-of-one-hundred-and-fifty-five/csi.exe";

fn sample() -> Vec<u8> {
    linux_tar(&[
        In::Dir("./"),
        In::File("./csi.exe", b"MZ binary", 1_600_000_000),
        In::Dir("dir/"),
        In::File("dir/a.txt", b"a", 1_800_000_000),
        In::Link("dir/b.txt", "dir/a.txt"),
        In::Symlink("lnk", "csi.exe"),
        In::File(LONG, b"long", 1_800_000_000),
    ])
}

#[test]
fn a_linux_layer_becomes_what_buildah_1_44_writes() {
    let times = LayerTimes {
        dirs: 1_750_000_000,
        clamp: Some(1_700_000_000),
    };
    let mut layer = Vec::new();
    let done = rewrite(&sample()[..], false, &mut layer, times).unwrap();
    let got = read_back(&layer);
    let names: Vec<&str> = got.iter().map(|o| o.name.as_str()).collect();
    let want_names: Vec<&str> = WHAT_1_44_WRITES.iter().map(|w| w.0).collect();
    assert_eq!(names, want_names);
    for (o, (name, kind, link, attr, dir, time, data)) in got.iter().zip(WHAT_1_44_WRITES) {
        let want = Out {
            name: name.to_string(),
            kind,
            link: link.map(String::from),
            fileattr: attr.to_string(),
            rawsd: security_descriptor(dir),
            creation: time.to_string(),
            mtime: time,
            data: data.to_vec(),
        };
        assert_eq!(o, &want, "{name}");
    }
    assert_eq!(done.entries, WHAT_1_44_WRITES.len());
    assert_eq!(done.size, layer.len() as u64);
    assert_eq!(done.digest, Digest::sha256(&layer));
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&layer[..])
        .read_to_end(&mut tar)
        .unwrap();
    assert_eq!(done.diff_id, Digest::sha256(&tar));
}

#[test]
fn the_same_input_and_times_give_the_same_bytes() {
    let times = LayerTimes {
        dirs: 1_750_000_000,
        clamp: None,
    };
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&sample()).unwrap();
        e.finish().unwrap()
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let ra = rewrite(&sample()[..], false, &mut a, times).unwrap();
    let rb = rewrite(&gz[..], true, &mut b, times).unwrap();
    assert_eq!((ra, &a), (rb, &b));
    // Without a clamp, entry times are kept and the roots take the image's time.
    let got = read_back(&a);
    assert_eq!(got[0].mtime, 1_750_000_000);
    assert_eq!(got[4].mtime, 1_800_000_000);
    let later = LayerTimes {
        dirs: 1_750_000_001,
        clamp: None,
    };
    let mut c = Vec::new();
    assert_ne!(
        rewrite(&sample()[..], false, &mut c, later).unwrap().digest,
        Digest::sha256(&a)
    );
}

#[test]
fn unsafe_or_already_windows_input_is_refused() {
    let times = LayerTimes {
        dirs: 0,
        clamp: None,
    };
    let mut escaping = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    // set_path refuses `..`, so the name goes into the header bytes directly.
    h.as_old_mut().name[..8].copy_from_slice(b"../x.exe");
    h.set_cksum();
    escaping.append(&h, &b"x"[..]).unwrap();
    let cases: [(Vec<u8>, &str); 3] = [
        (
            escaping.into_inner().unwrap(),
            "entry '../x.exe' leaves the layer's root",
        ),
        (
            linux_tar(&[In::File("Files/x.exe", b"x", 1)]),
            "entry 'Files/x.exe' is already under Files/ or Hives/",
        ),
        (
            b"not a tar at all, just text that is long enough".repeat(20),
            "cannot rewrite the layer",
        ),
    ];
    for (input, want) in cases {
        let err = rewrite(&input[..], false, Vec::new(), times).unwrap_err();
        assert!(err.to_string().contains(want), "{want}: got {err}");
    }
}

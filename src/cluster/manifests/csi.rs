//! The CSI driver a pod template names: a flag's value, or the directory under the kubelet's
//! `plugins` of a socket path (docs/cluster.md, "One driver, both halves").

/// The flags that name a CSI driver.
const DRIVER_FLAGS: [&str; 4] = ["drivername", "driver-name", "csi-driver", "driver"];

/// Is `s` a CSI driver name: a DNS subdomain with a dot (`file.csi.azure.com`)?
fn is_driver_name(s: &str) -> bool {
    s.contains('.')
        && s.len() <= 63
        && !s.starts_with(['.', '-'])
        && !s.ends_with(['.', '-'])
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
}

/// The CSI driver one of `words` (a container's command, args and literal env values) names:
/// a driver flag's value, else the directory under the kubelet's `plugins` of a socket path.
pub fn driver_hint<'a>(words: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
    let flag = words.clone().find_map(|w| {
        let (name, value) = w.trim_start_matches('-').split_once('=')?;
        let value = value.trim_matches(['"', '\'']);
        (DRIVER_FLAGS.contains(&name) && is_driver_name(value)).then(|| value.to_string())
    });
    flag.or_else(|| {
        words.into_iter().find_map(|w| {
            let path = w.replace("\\\\", "/").replace('\\', "/");
            let (_, rest) = path.split_once("kubelet/plugins/")?;
            let name = rest.split('/').next()?;
            is_driver_name(name).then(|| name.to_string())
        })
    })
}

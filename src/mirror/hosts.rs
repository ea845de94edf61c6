//! How a Windows node finds its mirrors: containerd's `config_path` tree of `hosts.toml` files,
//! one per source registry host, as data ([`model`]); as the Windows Machine Config Operator
//! renders it from ImageDigestMirrorSets and ImageTagMirrorSets ([`wmco`]) or as read from a
//! directory ([`dir`]); and the manifest requests containerd 1.7 makes from it ([`containerd`]).
//! docs/mirroring.md, "Windows nodes", says which sources each rule follows.

pub mod containerd;
pub mod dir;
pub mod model;
pub mod wmco;

#[cfg(test)]
mod tests;

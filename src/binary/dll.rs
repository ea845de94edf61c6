//! Which DLL imports a Windows image's files must provide. API-set names (`api-ms-win-*`,
//! `ext-ms-*`) are not files: Windows' loader resolves them through the API set schema
//! (Microsoft, "API set loader operation": the `.dll` of an API set name is a loader
//! convention; the name is an alias for a host DLL that the schema picks). DLL names compare
//! case-insensitively, as the loader's file lookup does on NTFS.

use std::collections::BTreeSet;

/// Whether `name` is an API-set contract name (prefix `api-` or `ext-`, any case), resolved by
/// the API set schema and never looked up as a file.
pub fn is_api_set(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("api-") || lower.starts_with("ext-")
}

/// The items whose key no item before them had, in order: one ordered-set insert per item,
/// so `n` items cost O(n log n) key comparisons (never a scan of the items kept so far).
pub fn first_of_each<T, K: Ord>(
    items: impl IntoIterator<Item = T>,
    mut key: impl FnMut(&T) -> K,
) -> Vec<T> {
    let mut seen = BTreeSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(key(item)))
        .collect()
}

/// The imports that are neither API sets nor in `provided` (DLL file names, any case), each
/// once, in import order.
pub fn missing(imports: &[String], provided: &BTreeSet<String>) -> Vec<String> {
    let have: BTreeSet<String> = provided.iter().map(|p| p.to_ascii_lowercase()).collect();
    let absent = imports
        .iter()
        .filter(|name| !is_api_set(name) && !have.contains(&name.to_ascii_lowercase()));
    first_of_each(absent, |name| name.to_ascii_lowercase())
        .into_iter()
        .cloned()
        .collect()
}

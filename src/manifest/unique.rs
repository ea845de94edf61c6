//! JSON read once while refusing a key twice in any object (issue 24). [`Unique`] wraps a
//! deserializer: every object met, whatever type reads it (a derived struct, a map, a
//! `serde_json::Value`, a skipped field), has its keys listed in [`Seen`] as they come, and a
//! key met twice is an error; values are read by the wrapped deserializer as they would be
//! without it. A body was read three times before (a walk for duplicate keys, a header read,
//! the typed read); it is now read once into its types.
//!
//! The wrapper forwards every request and every visit. An enum is never read in one pass (no
//! type read through it has one): its visit is left to `Visitor`'s default, an error, so a
//! caller falls back to reading the body the slow way rather than skipping a check.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::Deserialize as _;
use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// `T` read once from `bytes`, a key twice in any object refused. The bytes are checked as
/// UTF-8 once, as a whole, rather than string by string.
pub(super) fn read<'de, T: serde::Deserialize<'de>>(
    bytes: &'de [u8],
) -> Result<T, serde_json::Error> {
    let text = std::str::from_utf8(bytes).map_err(serde_json::Error::custom)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Unique(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Refuses a key twice in any object of `bytes`, reading nothing into a type: the same walk
/// over the bytes as they are (UTF-8 checked string by string, as `serde_json::from_slice`
/// reports it), for the slow reading whose errors are the ones reported.
pub(super) fn check(bytes: &[u8]) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de::IgnoredAny::deserialize(Unique(&mut de))?;
    de.end()
}

/// Reads as `D` reads, refusing any object with a key twice (the error of
/// [`duplicate_key`]). Fields read as `IgnoredAny` are walked in full, so their objects are
/// checked too.
struct Unique<D>(D);

/// Forwards deserializer requests to the wrapped deserializer, the visitor wrapped.
macro_rules! forward_requests {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Unique<D> {
    type Error = D::Error;

    forward_requests! {
        deserialize_any(); deserialize_bool(); deserialize_i8(); deserialize_i16();
        deserialize_i32(); deserialize_i64(); deserialize_i128(); deserialize_u8();
        deserialize_u16(); deserialize_u32(); deserialize_u64(); deserialize_u128();
        deserialize_f32(); deserialize_f64(); deserialize_char(); deserialize_str();
        deserialize_string(); deserialize_bytes(); deserialize_byte_buf();
        deserialize_option(); deserialize_unit(); deserialize_seq(); deserialize_map();
        deserialize_identifier();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }

    /// A skipped value is still walked: an object in it may hold a key twice.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor whose nested values (options, sequences, objects) are read through [`Unique`].
struct Wrap<V>(V);

/// Forwards visits of plain values unchanged.
macro_rules! forward_visits {
    ($($method:ident($ty:ty);)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.expecting(f)
    }

    forward_visits! {
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64);
        visit_i128(i128); visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64);
        visit_u128(u128); visit_f32(f32); visit_f64(f64); visit_char(char);
        visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Unique(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Unique(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(UniqueSeq(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(UniqueMap {
            map,
            seen: Seen::default(),
        })
    }
}

/// A seed whose value is read through [`Unique`].
struct Wrapped<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrapped<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Unique(d))
    }
}

/// An array whose elements are read through [`Unique`].
struct UniqueSeq<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for UniqueSeq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Wrapped(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// An object whose keys are listed as they come (a key met twice is an error) and whose
/// values are read through [`Unique`].
struct UniqueMap<'de, A> {
    map: A,
    seen: Seen<'de>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for UniqueMap<'de, A> {
    type Error = A::Error;

    /// The key is read as the text holds it (borrowed from the body unless it has escapes),
    /// checked, handed to `seed`, then listed.
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(Key(key)) = self.map.next_key::<Key<'de>>()? else {
            return Ok(None);
        };
        if self.seen.contains(&key) {
            return Err(A::Error::custom(duplicate_key(&key)));
        }
        let value = match &key {
            Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k))?,
            Cow::Owned(k) => seed.deserialize(StrDeserializer::new(k))?,
        };
        self.seen.insert(key);
        Ok(Some(value))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(Wrapped(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// The error text of a key met twice in one object (at most its first 100 characters).
pub(super) fn duplicate_key(key: &str) -> String {
    format!(
        "duplicate key '{}'",
        key.chars().take(100).collect::<String>()
    )
}

/// An object key as the JSON text holds it: borrowed from the body unless it has escapes
/// (a manifest's keys are then read without an allocation each).
pub(super) struct Key<'de>(pub Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The keys of one object seen so far: a short list kept in place while the object is small
/// (a manifest's objects have a handful of keys, and each object's list was an allocation), a
/// hash set past [`Seen::FEW`] keys, so a hostile object of many keys still costs linear time.
pub(super) struct Seen<'de> {
    /// The first keys, `len` of them.
    few: [Cow<'de, str>; FEW_KEYS],
    len: usize,
    /// Every key, once there are more than [`Seen::FEW`].
    many: Option<HashSet<Cow<'de, str>>>,
}

/// [`Seen::FEW`], as the list's length.
const FEW_KEYS: usize = 16;

impl Default for Seen<'_> {
    fn default() -> Self {
        Seen {
            few: std::array::from_fn(|_| Cow::Borrowed("")),
            len: 0,
            many: None,
        }
    }
}

impl<'de> Seen<'de> {
    /// Keys kept in the list before they move to a hash set.
    pub(super) const FEW: usize = FEW_KEYS;

    pub(super) fn contains(&self, key: &str) -> bool {
        match &self.many {
            Some(keys) => keys.contains(key),
            None => self.few[..self.len].iter().any(|k| k == key),
        }
    }

    pub(super) fn insert(&mut self, key: Cow<'de, str>) {
        if let Some(keys) = &mut self.many {
            keys.insert(key);
        } else if self.len < Self::FEW {
            self.few[self.len] = key;
            self.len += 1;
        } else {
            let mut keys: HashSet<_> = self.few.iter_mut().map(std::mem::take).collect();
            keys.insert(key);
            self.many = Some(keys);
        }
    }
}

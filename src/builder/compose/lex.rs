//! The words of a Containerfile instruction as Docker's shell lexer reads them (pure), for the
//! instructions a composed stage applies itself (`ENV`, `LABEL`, `USER`, `WORKDIR`): quotes,
//! the escape character and variable expansion in ONE pass, so that `\$HOME` stays literal
//! and `'$HOME'` is not expanded (docs/buildah.md, "Composed stage: words and variables").
//!
//! Expansions: `$NAME`, `${NAME}`, `${NAME:-word}`, `${NAME-word}`, `${NAME:+word}`,
//! `${NAME+word}`; any other `${NAME…}` form is refused ([`LexError::Unsupported`]) so the
//! stage is built by Buildah rather than given a value Docker would not give.

use std::collections::BTreeMap;

/// Why a word cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LexError {
    /// A quote is not closed.
    #[error("the {0} quote is not closed")]
    Unterminated(char),
    /// A `${` is not closed.
    #[error("'${{' is not closed")]
    Brace,
    /// A `${NAME…}` form imgcheck does not expand.
    #[error("'${{{0}…}}' uses '{1}', which imgcheck does not expand")]
    Unsupported(String, String),
}

/// Splits `s` at white space outside quotes and not escaped, keeping each word as written
/// (quotes and escapes are read later, by [`word`]).
pub fn split(s: &str, escape: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                continue;
            }
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (q, e) if e == escape && q != Some('\'') => {
                word.push(e);
                word.extend(chars.next());
                continue;
            }
            _ => {}
        }
        word.push(c);
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A lexer over one word.
struct Lexer<'a> {
    chars: Vec<char>,
    at: usize,
    escape: char,
    vars: &'a BTreeMap<String, String>,
    /// Names expanded that `vars` does not hold.
    missing: Vec<String>,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += usize::from(c.is_some());
        c
    }

    /// Reads until `stop` (consumed) or the end; `stop` `None` reads to the end.
    fn until(&mut self, stop: Option<char>) -> Result<String, LexError> {
        let mut out = String::new();
        while let Some(c) = self.next() {
            match c {
                c if Some(c) == stop => return Ok(out),
                '\'' => out.push_str(&self.single()?),
                '"' => out.push_str(&self.double()?),
                '$' => out.push_str(&self.dollar()?),
                e if e == self.escape => match self.next() {
                    Some(n) => out.push(n),
                    None => out.push(e),
                },
                c => out.push(c),
            }
        }
        match stop {
            Some(_) => Err(LexError::Brace),
            None => Ok(out),
        }
    }

    fn single(&mut self) -> Result<String, LexError> {
        let mut out = String::new();
        loop {
            match self.next() {
                Some('\'') => return Ok(out),
                Some(c) => out.push(c),
                None => return Err(LexError::Unterminated('\'')),
            }
        }
    }

    fn double(&mut self) -> Result<String, LexError> {
        let mut out = String::new();
        loop {
            match self.next() {
                Some('"') => return Ok(out),
                Some('$') => out.push_str(&self.dollar()?),
                Some(e) if e == self.escape => match self.peek() {
                    Some(n) if n == '"' || n == '$' || n == e => {
                        out.push(n);
                        self.at += 1;
                    }
                    _ => out.push(e),
                },
                Some(c) => out.push(c),
                None => return Err(LexError::Unterminated('"')),
            }
        }
    }

    fn name(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            name.push(c);
            self.at += 1;
        }
        name
    }

    /// After a `$`.
    fn dollar(&mut self) -> Result<String, LexError> {
        if self.peek() != Some('{') {
            let name = self.name();
            return Ok(if name.is_empty() {
                "$".to_string()
            } else {
                self.value(&name).unwrap_or_default()
            });
        }
        self.at += 1;
        let name = self.name();
        let mut op = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| !c.is_ascii_alphanumeric() && *c != '}')
        {
            op.push(c);
            self.at += 1;
            if op != ":" {
                break;
            }
        }
        if op.is_empty() {
            return match self.next() {
                Some('}') => Ok(self.value(&name).unwrap_or_default()),
                _ => Err(LexError::Brace),
            };
        }
        if name.is_empty() || !matches!(op.as_str(), ":-" | "-" | ":+" | "+") {
            return Err(LexError::Unsupported(name, op));
        }
        let word = self.until(Some('}'))?;
        let value = self.value(&name);
        let set = if op.starts_with(':') {
            value.as_ref().is_some_and(|v| !v.is_empty())
        } else {
            value.is_some()
        };
        Ok(match (op.ends_with('-'), set) {
            (true, true) => value.unwrap_or_default(),
            (true, false) | (false, true) => word,
            (false, false) => String::new(),
        })
    }

    fn value(&mut self, name: &str) -> Option<String> {
        let value = self.vars.get(name).cloned();
        if value.is_none() && !self.missing.iter().any(|m| m == name) {
            self.missing.push(name.to_string());
        }
        value
    }
}

/// Reads one word as Docker does: quotes removed, the escape character applied, variables
/// expanded from `vars` (an unknown name is empty). White space is kept.
pub fn word(s: &str, escape: char, vars: &BTreeMap<String, String>) -> Result<String, LexError> {
    word_and_missing(s, escape, vars).map(|(w, _)| w)
}

/// [`word`], and the names it expanded that `vars` does not hold (in order, each once).
pub fn word_and_missing(
    s: &str,
    escape: char,
    vars: &BTreeMap<String, String>,
) -> Result<(String, Vec<String>), LexError> {
    let mut lexer = Lexer {
        chars: s.chars().collect(),
        at: 0,
        escape,
        vars,
        missing: Vec::new(),
    };
    let word = lexer.until(None)?;
    Ok((word, lexer.missing))
}

#[cfg(test)]
mod tests;

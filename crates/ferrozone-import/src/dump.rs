//! Checking a plain-SQL dump before `psql` runs it. A dump is a script: besides SQL, psql
//! runs its meta-commands (`\!` runs a shell command, `\connect` writes into another
//! database, `\copy … to program` runs a program), and the server runs `COPY … PROGRAM`. A
//! dump comes from an installation being left, often because it is distrusted, so
//! [`check`] refuses all of that before anything of the dump runs.
//!
//! The check reads the dump as psql's lexer does, and refuses whatever it could read
//! differently, rather than guess:
//! - a backslash outside quotes, comments and `COPY … FROM stdin` data is a meta-command,
//!   refused (pg_dump's own `\restrict KEY` / `\unrestrict KEY` lines are blanked: the loader
//!   puts psql into restricted mode itself when psql has it);
//! - a `COPY` other than `COPY … FROM stdin` is refused (`PROGRAM`, server files, `TO`), and
//!   its data runs to the line `\.`, as psql reads it;
//! - a quoted string whose end depends on `standard_conforming_strings` (a backslash before
//!   a quote), a `$` after a name or number that could open a dollar quote, `BEGIN ATOMIC`
//!   (which changes where psql ends a statement), a NUL byte, and any byte outside ASCII in
//!   SQL text (a client encoding such as SJIS makes psql read a quote or a backslash
//!   inside a character) are refused. pg_dump writes none of them outside table data.
//!
//! psql's variables (`:name`) are left to psql: with `\set` refused they hold psql's own
//! values only.

#[cfg(test)]
mod tests;

/// Why a dump is not loaded: the line (counted from 1) and what is on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct Refused {
    pub line: usize,
    pub reason: String,
}

/// Checks `dump`; gives the text psql is to run: the dump with pg_dump's own
/// `\restrict`/`\unrestrict` lines blanked (so line numbers stay the dump's).
pub fn check(dump: &[u8]) -> Result<Vec<u8>, Refused> {
    let mut s =
        Scanner { text: dump, pos: 0, line: 1, line_start: 0, depth: 0, tokens: Vec::new(), blanked: Vec::new() };
    while let Some(b) = s.peek(0) {
        match b {
            b'-' if s.peek(1) == Some(b'-') => s.line_comment()?,
            b'/' if s.peek(1) == Some(b'*') => s.block_comment()?,
            b'\'' => s.literal(false)?,
            b'"' => s.quoted_identifier()?,
            b'$' => s.dollar()?,
            b'\\' => s.backslash()?,
            b'(' => {
                s.bump()?;
                s.depth += 1;
                s.tokens.push(Token::Open);
            }
            b')' => {
                s.bump()?;
                s.depth = s.depth.saturating_sub(1);
                s.tokens.push(Token::Close);
            }
            b';' => {
                s.bump()?;
                if s.depth == 0 {
                    s.end_statement()?;
                }
            }
            b if b.is_ascii_alphanumeric() || b == b'_' => s.word()?,
            _ => {
                s.bump()?;
            }
        }
    }
    Ok(s.output())
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    /// A name or keyword, lower-cased.
    Word(String),
    /// A quoted string, quoted identifier or dollar-quoted text.
    Quoted,
    Open,
    Close,
}

struct Scanner<'a> {
    text: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
    /// Parentheses open: psql ends a statement only at a `;` outside them.
    depth: usize,
    /// The current statement's tokens (operators and comments left out).
    tokens: Vec<Token>,
    /// pg_dump's own `\restrict` lines: byte ranges left out of the output.
    blanked: Vec<(usize, usize)>,
}

impl Scanner<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.pos + ahead).copied()
    }

    fn refused(&self, line: usize, reason: impl Into<String>) -> Refused {
        Refused { line, reason: reason.into() }
    }

    /// Takes one byte of SQL text (not table data): ASCII and not NUL.
    fn bump(&mut self) -> Result<u8, Refused> {
        let b = self.text[self.pos];
        if b == 0 {
            return Err(self.refused(self.line, "a NUL byte outside table data"));
        }
        if !b.is_ascii() {
            return Err(self.refused(
                self.line,
                "a byte outside ASCII in SQL text (not table data): another client encoding would make psql read it differently",
            ));
        }
        self.pos += 1;
        if b == b'\n' {
            self.line += 1;
            self.line_start = self.pos;
        }
        Ok(b)
    }

    fn bump_to(&mut self, end: usize) -> Result<(), Refused> {
        while self.pos < end.min(self.text.len()) {
            self.bump()?;
        }
        Ok(())
    }

    /// `--` to the end of the line: psql ends it at a carriage return too.
    fn line_comment(&mut self) -> Result<(), Refused> {
        while self.peek(0).is_some_and(|b| b != b'\n' && b != b'\r') {
            self.bump()?;
        }
        Ok(())
    }

    /// `/* … */`, nested as psql nests them.
    fn block_comment(&mut self) -> Result<(), Refused> {
        let mut depth = 0usize;
        while self.pos < self.text.len() {
            let pair = (self.peek(0), self.peek(1));
            if pair == (Some(b'/'), Some(b'*')) {
                depth += 1;
                self.bump_to(self.pos + 2)?;
            } else if pair == (Some(b'*'), Some(b'/')) {
                self.bump_to(self.pos + 2)?;
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            } else {
                self.bump()?;
            }
        }
        Ok(())
    }

    /// A quoted string from the `'` at `pos`; `escapes` for an `E'…'` string.
    fn literal(&mut self, escapes: bool) -> Result<(), Refused> {
        let with = string_end(self.text, self.pos, true);
        if !escapes && with != string_end(self.text, self.pos, false) {
            return Err(self.refused(
                self.line,
                "a quoted string with a backslash before a quote: where it ends depends on standard_conforming_strings",
            ));
        }
        self.bump_to(with)?;
        self.tokens.push(Token::Quoted);
        Ok(())
    }

    fn quoted_identifier(&mut self) -> Result<(), Refused> {
        self.bump()?;
        while let Some(b) = self.peek(0) {
            self.bump()?;
            if b == b'"' {
                if self.peek(0) != Some(b'"') {
                    break;
                }
                self.bump()?;
            }
        }
        self.tokens.push(Token::Quoted);
        Ok(())
    }

    /// A `$` starting a token: a dollar quote when a delimiter `$tag$` starts here, else a
    /// parameter (`$1`) or part of an operator.
    fn dollar(&mut self) -> Result<(), Refused> {
        let Some(len) = delimiter_len(self.text, self.pos) else {
            self.bump()?;
            return Ok(());
        };
        let delimiter = &self.text[self.pos..self.pos + len];
        let body = self.pos + len;
        let end = find(&self.text[body..], delimiter).map_or(self.text.len(), |at| body + at + len);
        self.bump_to(end)?;
        self.tokens.push(Token::Quoted);
        Ok(())
    }

    /// A name, keyword or number. psql reads a `$` inside a name as part of it, but one
    /// after a number as a new token: a `$` that could open a dollar quote there is refused.
    fn word(&mut self) -> Result<(), Refused> {
        let start = self.pos;
        while let Some(b) = self.peek(0) {
            if b == b'$' && delimiter_len(self.text, self.pos).is_some() {
                return Err(
                    self.refused(self.line, "a `$` right after a name or number that could open a dollar quote")
                );
            }
            if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$') {
                break;
            }
            self.bump()?;
        }
        let word = String::from_utf8_lossy(&self.text[start..self.pos]).to_ascii_lowercase();
        if word == "e" && self.peek(0) == Some(b'\'') {
            return self.literal(true);
        }
        self.tokens.push(Token::Word(word));
        Ok(())
    }

    /// A backslash in SQL: pg_dump's own restrict lines are blanked, every other is a
    /// meta-command, refused.
    fn backslash(&mut self) -> Result<(), Refused> {
        let end = self.text[self.pos..].iter().position(|&b| b == b'\n').map_or(self.text.len(), |at| self.pos + at);
        let rest = &self.text[self.pos..end];
        if self.pos == self.line_start && is_restrict_line(rest.strip_suffix(b"\r").unwrap_or(rest)) {
            self.blanked.push((self.pos, end));
            self.pos = end;
            return Ok(());
        }
        let name: String =
            rest[1..].iter().take_while(|b| b.is_ascii_graphic()).take(24).map(|&b| char::from(b)).collect();
        Err(self
            .refused(self.line, format!("the psql meta-command `\\{name}` is refused: a dump is loaded as SQL only")))
    }

    /// At a `;` ending a statement: refuses what may not run, and reads the data of a
    /// `COPY … FROM stdin`.
    fn end_statement(&mut self) -> Result<(), Refused> {
        let tokens = std::mem::take(&mut self.tokens);
        let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x == w);
        if tokens.windows(2).any(|p| word(&p[0], "begin") && word(&p[1], "atomic")) {
            return Err(self.refused(self.line, "BEGIN ATOMIC function bodies are not accepted in a dump"));
        }
        if !tokens.first().is_some_and(|t| word(t, "copy")) {
            return Ok(());
        }
        if tokens.iter().any(|t| word(t, "program")) {
            return Err(self.refused(self.line, "COPY … PROGRAM runs a program on the database server: refused"));
        }
        if !copies_from_stdin(&tokens) {
            return Err(self.refused(self.line, "only COPY … FROM stdin, as pg_dump writes it, is accepted"));
        }
        while self.peek(0).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            self.bump()?;
        }
        match self.peek(0) {
            None => return Ok(()),
            Some(b'\n') => {
                self.bump()?;
            }
            Some(_) => return Err(self.refused(self.line, "text after COPY … FROM stdin on its line")),
        }
        self.copy_data();
        Ok(())
    }

    /// Table data: whole lines up to and with the line `\.` (psql's end of data), unchecked.
    fn copy_data(&mut self) {
        while self.pos < self.text.len() {
            let end =
                self.text[self.pos..].iter().position(|&b| b == b'\n').map_or(self.text.len(), |at| self.pos + at);
            let line = &self.text[self.pos..end];
            let done = line.strip_suffix(b"\r").unwrap_or(line) == b"\\.";
            self.pos = (end + 1).min(self.text.len());
            if end < self.text.len() {
                self.line += 1;
                self.line_start = self.pos;
            }
            if done {
                return;
            }
        }
    }

    fn output(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len());
        let mut from = 0;
        for &(start, end) in &self.blanked {
            out.extend_from_slice(&self.text[from..start]);
            from = end;
        }
        out.extend_from_slice(&self.text[from..]);
        out
    }
}

/// The index after the quote closing the string opened at `open` (or the end of the
/// text); `backslash`: a backslash escapes the next byte.
fn string_end(text: &[u8], open: usize, backslash: bool) -> usize {
    let mut i = open + 1;
    while i < text.len() {
        match text[i] {
            b'\\' if backslash => i += 2,
            b'\'' if text.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// The length of the dollar-quote delimiter (`$$`, `$tag$`) at `at`, if one is there.
fn delimiter_len(text: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    if text.get(i).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
        while text.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
            i += 1;
        }
    }
    (text.get(i) == Some(&b'$')).then_some(i + 1 - at)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// pg_dump's `\restrict KEY` or `\unrestrict KEY`.
fn is_restrict_line(line: &[u8]) -> bool {
    let key = line.strip_prefix(b"\\restrict ").or_else(|| line.strip_prefix(b"\\unrestrict "));
    key.is_some_and(|k| (1..=128).contains(&k.len()) && k.iter().all(u8::is_ascii_alphanumeric))
}

/// Whether a COPY statement's first `FROM` or `TO` outside parentheses is `FROM stdin`.
fn copies_from_stdin(tokens: &[Token]) -> bool {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Open => depth += 1,
            Token::Close => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w == "to" => return false,
            Token::Word(w) if depth == 0 && w == "from" => {
                return matches!(tokens.get(i + 1), Some(Token::Word(next)) if next == "stdin");
            }
            _ => {}
        }
    }
    false
}

//! A light scan of the raw text before and after pest runs.
//!
//! Before parsing it rejects what pest would report badly or what could exhaust the stack:
//! brackets nested deeper than [`MAX_NESTING`], unclosed `/*` comments and strings. After a
//! parse error it finds the unclosed bracket that a "expected `}`" refers to.

use super::error::Error;
use super::span::Span;

/// The deepest nesting of `(`, `[` and `{` accepted.
pub const MAX_NESTING: usize = 100;

/// Reject unclosed comments and strings and too-deep bracket nesting.
///
/// # Errors
/// The first such problem, in source order.
pub fn prescan(src: &str) -> Result<(), Error> {
    let mut depth = 0usize;
    for tok in Lexer::new(src) {
        match tok? {
            (Bracket::Open(_), at) => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Error::TooDeep {
                        span: Span::new(at, at + 1),
                        limit: MAX_NESTING,
                    });
                }
            }
            (Bracket::Close(_), _) => depth = depth.saturating_sub(1),
        }
    }
    Ok(())
}

/// The innermost bracket opened before `pos` and not closed by then, if it is `open`.
pub fn unclosed_before(src: &str, pos: usize, open: char) -> Option<Span> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    for tok in Lexer::new(&src[..pos.min(src.len())]) {
        match tok {
            Ok((Bracket::Open(c), at)) => stack.push((c, at)),
            Ok((Bracket::Close(c), _)) => {
                if let Some(i) = stack.iter().rposition(|(o, _)| closer(*o) == c) {
                    stack.truncate(i);
                }
            }
            Err(_) => return None,
        }
    }
    stack
        .into_iter()
        .rev()
        .find(|(c, _)| *c == open)
        .map(|(_, at)| Span::new(at, at + 1))
}

/// The innermost bracket of any kind left open at the end of `src`, with its span.
pub fn innermost_unclosed(src: &str) -> Option<(char, Span)> {
    ['(', '[', '{']
        .into_iter()
        .filter_map(|open| unclosed_before(src, src.len(), open).map(|at| (open, at)))
        .max_by_key(|(_, at)| at.start)
}

/// The closing bracket for an opening one.
pub fn closer(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

/// A bracket seen outside comments and strings.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bracket {
    Open(char),
    Close(char),
}

/// Walks the text, skipping comments and strings, yielding brackets with their offsets.
struct Lexer<'a> {
    bytes: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            bytes: src.as_bytes(),
            i: 0,
        }
    }

    fn skip_line(&mut self) {
        while self.i < self.bytes.len() && self.bytes[self.i] != b'\n' && self.bytes[self.i] != b'\r' {
            self.i += 1;
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), Error> {
        let start = self.i;
        self.i += 2;
        while self.i + 1 < self.bytes.len() {
            if &self.bytes[self.i..self.i + 2] == b"*/" {
                self.i += 2;
                return Ok(());
            }
            self.i += 1;
        }
        self.i = self.bytes.len();
        Err(Error::UnterminatedComment {
            span: Span::new(start, start + 2),
        })
    }

    fn skip_string(&mut self) -> Result<(), Error> {
        let start = self.i;
        self.i += 1;
        while self.i < self.bytes.len() {
            match self.bytes[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\n' | b'\r' => break,
                _ => self.i += 1,
            }
        }
        let end = self.i;
        self.i = self.bytes.len();
        Err(Error::UnterminatedString {
            span: Span::new(start, end),
        })
    }
}

impl Iterator for Lexer<'_> {
    type Item = Result<(Bracket, usize), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.i < self.bytes.len() {
            let at = self.i;
            let b = self.bytes[at];
            let next = self.bytes.get(at + 1).copied();
            match (b, next) {
                (b'/', Some(b'/')) | (b'#', _) => self.skip_line(),
                (b'/', Some(b'*')) => {
                    if let Err(e) = self.skip_block_comment() {
                        return Some(Err(e));
                    }
                }
                (b'"', _) => {
                    if let Err(e) = self.skip_string() {
                        return Some(Err(e));
                    }
                }
                (b'(' | b'[' | b'{', _) => {
                    self.i += 1;
                    return Some(Ok((Bracket::Open(b as char), at)));
                }
                (b')' | b']' | b'}', _) => {
                    self.i += 1;
                    return Some(Ok((Bracket::Close(b as char), at)));
                }
                _ => self.i += 1,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_in_comments_and_strings_are_ignored() {
        assert!(prescan("model { // {{{\n /* ((( */ x ~ f(\"[[\") }").is_ok());
    }

    #[test]
    fn deep_nesting_is_rejected_at_the_first_bracket_past_the_limit() {
        let src = "(".repeat(MAX_NESTING + 5);
        match prescan(&src) {
            Err(Error::TooDeep { span, .. }) => assert_eq!(span.start as usize, MAX_NESTING),
            other => panic!("expected TooDeep, got {other:?}"),
        }
    }

    #[test]
    fn unclosed_comment_and_string_are_found() {
        assert!(matches!(
            prescan("a /* b"),
            Err(Error::UnterminatedComment { .. })
        ));
        assert!(matches!(
            prescan("import \"rbf\nx"),
            Err(Error::UnterminatedString { .. })
        ));
    }

    #[test]
    fn unclosed_before_finds_the_innermost_open_bracket() {
        let src = "model {\n  x ~ f(a, [b]\n";
        assert_eq!(unclosed_before(src, src.len(), '('), Some(Span::new(15, 16)));
        assert_eq!(unclosed_before(src, src.len(), '{'), Some(Span::new(6, 7)));
        assert_eq!(unclosed_before(src, src.len(), '['), None);
    }
}

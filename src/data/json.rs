//! A small JSON reader that keeps the byte span of every number, so data problems can point
//! into the file. Only what Stan-style data files use: objects, arrays, numbers, and (to be
//! skipped or reported) strings, `true`, `false`, `null`.

use crate::syntax::span::Span;

/// A JSON value with spans.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// A number; `is_int` when written without a fraction or exponent.
    Number {
        /// Its value.
        value: f64,
        /// Written as an integer.
        is_int: bool,
        /// Where it stands.
        span: Span,
    },
    /// An array.
    Array(Vec<Json>, Span),
    /// An object: keys with their spans, in file order.
    Object(Vec<(String, Span, Json)>, Span),
    /// Anything else (string, bool, null).
    Other(&'static str, Span),
}

impl Json {
    /// Where the value stands.
    pub fn span(&self) -> Span {
        match self {
            Json::Number { span, .. }
            | Json::Array(_, span)
            | Json::Object(_, span)
            | Json::Other(_, span) => *span,
        }
    }
}

/// A syntax error at a byte offset.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonError {
    /// What was expected.
    pub message: String,
    /// Where.
    pub span: Span,
}

/// Parse a whole JSON text.
///
/// # Errors
/// The first syntax error with its position.
pub fn parse_json(text: &str) -> Result<Json, JsonError> {
    let mut p = Parser {
        s: text.as_bytes(),
        // a UTF-8 byte order mark (Windows tools write one) is not part of the JSON
        pos: if text.starts_with('\u{feff}') { 3 } else { 0 },
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.pos < p.s.len() {
        return Err(p.err("expected end of file"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

const MAX_DEPTH: usize = 64;

impl Parser<'_> {
    fn err(&self, msg: &str) -> JsonError {
        let end = (self.pos + 1).min(self.s.len());
        JsonError {
            message: msg.to_string(),
            span: Span::new(self.pos.min(end), end),
        }
    }

    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Json, JsonError> {
        self.ws();
        let Some(&c) = self.s.get(self.pos) else {
            return Err(self.err("expected a value, found end of file"));
        };
        match c {
            b'[' | b'{' if self.depth >= MAX_DEPTH => Err(self.err("nesting too deep")),
            b'[' => self.array(),
            b'{' => self.object(),
            b'"' => {
                let start = self.pos;
                self.string()?;
                Ok(Json::Other("a string", Span::new(start, self.pos)))
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.word(),
        }
    }

    fn word(&mut self) -> Result<Json, JsonError> {
        for (w, what) in [
            ("true", "a boolean"),
            ("false", "a boolean"),
            ("null", "null"),
            ("NaN", "NaN"),
        ] {
            if self.s[self.pos..].starts_with(w.as_bytes()) {
                let start = self.pos;
                self.pos += w.len();
                return Ok(Json::Other(what, Span::new(start, self.pos)));
            }
        }
        Err(self.err("expected a number, an array or an object"))
    }

    fn array(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        self.pos += 1;
        self.depth += 1;
        let mut items = Vec::new();
        self.ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Json::Array(items, Span::new(start, self.pos)));
        }
        loop {
            items.push(self.value()?);
            self.ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Json::Array(items, Span::new(start, self.pos)));
                }
                _ => return Err(self.err("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        self.pos += 1;
        self.depth += 1;
        let mut items = Vec::new();
        self.ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Json::Object(items, Span::new(start, self.pos)));
        }
        loop {
            self.ws();
            if self.s.get(self.pos) != Some(&b'"') {
                return Err(self.err("expected a quoted key"));
            }
            let kstart = self.pos;
            let key = self.string()?;
            let kspan = Span::new(kstart, self.pos);
            self.ws();
            if self.s.get(self.pos) != Some(&b':') {
                return Err(self.err("expected `:` after the key"));
            }
            self.pos += 1;
            let v = self.value()?;
            items.push((key, kspan, v));
            self.ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Json::Object(items, Span::new(start, self.pos)));
                }
                _ => return Err(self.err("expected `,` or `}`")),
            }
        }
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let start = self.pos;
        while let Some(&c) = self.s.get(self.pos) {
            match c {
                b'"' => {
                    let text = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                    self.pos += 1;
                    return Ok(text);
                }
                b'\\' => self.pos += 2,
                _ => self.pos += 1,
            }
        }
        Err(self.err("unterminated string"))
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        let mut is_int = true;
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        while let Some(&c) = self.s.get(self.pos) {
            match c {
                b'0'..=b'9' => {}
                b'.' | b'e' | b'E' | b'+' | b'-' => is_int = false,
                _ => break,
            }
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
        let span = Span::new(start, self.pos);
        match text.parse::<f64>() {
            Ok(value) => Ok(Json::Number { value, is_int, span }),
            Err(_) => Err(JsonError {
                message: "malformed number".into(),
                span,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_spans_and_intness() {
        let j = parse_json(r#"{"N": 3, "x": [1.5, -2]}"#).unwrap();
        let Json::Object(items, _) = j else { panic!() };
        assert_eq!(items[0].0, "N");
        assert!(matches!(items[0].2, Json::Number { is_int: true, .. }));
        let Json::Array(xs, _) = &items[1].2 else { panic!() };
        assert!(matches!(xs[0], Json::Number { is_int: false, span, .. } if span == Span::new(15, 18)));
    }

    #[test]
    fn malformed_json_reports_a_position() {
        let e = parse_json("{\"a\": [1, 2}").unwrap_err();
        assert!(e.message.contains("`]`"));
        assert_eq!(e.span.start, 11);
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_spans_stay_in_the_file() {
        let j = parse_json("\u{feff}{\"N\": 3}").unwrap();
        let Json::Object(items, _) = j else {
            panic!("an object")
        };
        assert_eq!(items[0].1, Span::new(4, 7));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let text = "[".repeat(10_000);
        assert!(parse_json(&text).is_err());
    }
}

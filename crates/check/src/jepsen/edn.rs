//! Just enough EDN for Jepsen op maps: one flat map per line, such as
//! `{:process 0, :type :invoke, :f :get, :key "5", :value nil}`.

use std::borrow::Cow;

/// A scalar EDN value, borrowed from the line where it can be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edn<'a> {
    /// `nil`.
    Nil,
    /// An integer.
    Int(i64),
    /// A string, unescaped (borrowed unless it held an escape).
    Str(Cow<'a, str>),
    /// A keyword, without its colon.
    Keyword(&'a str),
}

/// A flat map of keyword keys to scalar values, in the order written; keys are distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdnMap<'a>(Vec<(&'a str, Edn<'a>)>);

impl<'a> EdnMap<'a> {
    /// The value of key `:name`.
    pub fn get(&self, name: &str) -> Option<&Edn<'a>> {
        self.0
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
    }
}

/// Parses one flat map of keyword keys to scalar values; `Err` says what is wrong and at
/// which column (in characters, from 1).
pub fn parse_map(text: &str) -> Result<EdnMap<'_>, String> {
    let mut cursor = Cursor {
        text: text.trim(),
        at: 0,
    };
    cursor.expect('{')?;
    let mut map = Vec::with_capacity(5);
    loop {
        cursor.skip_space();
        if cursor.eat('}') {
            break;
        }
        let key = match cursor.value()? {
            Edn::Keyword(k) => k,
            other => return Err(format!("map key {other:?} is not a keyword")),
        };
        cursor.skip_space();
        let value = cursor.value()?;
        if map.iter().any(|(k, _)| *k == key) {
            return Err(format!("key :{key} appears twice"));
        }
        map.push((key, value));
    }
    cursor.skip_space();
    if cursor.at < cursor.text.len() {
        return Err("text after the closing '}'".to_string());
    }
    Ok(EdnMap(map))
}

/// A position in one line, in bytes; only ever on a char boundary.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    /// Moves past `c`, which [`Cursor::peek`] returned.
    fn advance(&mut self, c: char) {
        self.at += c.len_utf8();
    }

    /// The column of the cursor, in characters from 1 (for messages).
    fn column(&self) -> usize {
        self.text[..self.at].chars().count() + 1
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.advance(c);
        }
        found
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{c}' at column {}", self.column()))
        }
    }

    /// Skips whitespace and commas (commas are whitespace in EDN).
    fn skip_space(&mut self) {
        while let Some(c) = self.peek().filter(|&c| c.is_whitespace() || c == ',') {
            self.advance(c);
        }
    }

    fn token(&mut self) -> &'a str {
        let start = self.at;
        while let Some(c) = self
            .peek()
            .filter(|&c| !c.is_whitespace() && c != ',' && c != '}')
        {
            self.advance(c);
        }
        &self.text[start..self.at]
    }

    fn value(&mut self) -> Result<Edn<'a>, String> {
        match self.peek() {
            None => Err("unexpected end of line (missing '}'?)".to_string()),
            Some('"') => self.string(),
            Some(':') => {
                self.at += 1;
                let name = self.token();
                if name.is_empty() {
                    return Err(format!("empty keyword at column {}", self.column() - 1));
                }
                Ok(Edn::Keyword(name))
            }
            Some(_) => {
                let column = self.column();
                let token = self.token();
                if token == "nil" {
                    return Ok(Edn::Nil);
                }
                token
                    .parse()
                    .map(Edn::Int)
                    .map_err(|_| format!("unsupported value {token:?} at column {column}"))
            }
        }
    }

    fn string(&mut self) -> Result<Edn<'a>, String> {
        let column = self.column();
        self.at += 1;
        let start = self.at;
        // Borrowed until the first escape; owned from there.
        let mut owned: Option<String> = None;
        loop {
            let Some(c) = self.peek() else {
                return Err(format!("string starting at column {column} never ends"));
            };
            let before = self.at;
            self.advance(c);
            match c {
                '"' => {
                    return Ok(Edn::Str(match owned {
                        Some(out) => Cow::Owned(out),
                        None => Cow::Borrowed(&self.text[start..before]),
                    }));
                }
                '\\' => {
                    let escaped = self.peek().ok_or("string ends in a backslash")?;
                    self.advance(escaped);
                    owned
                        .get_or_insert_with(|| self.text[start..before].to_string())
                        .push(match escaped {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            other => other,
                        });
                }
                c => {
                    if let Some(out) = &mut owned {
                        out.push(c);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_op_map() {
        let map =
            parse_map(r#"{:process 3, :type :ok, :f :get, :key "5", :value "a \"b\""}"#).unwrap();
        assert_eq!(map.get("process"), Some(&Edn::Int(3)));
        assert_eq!(map.get("type"), Some(&Edn::Keyword("ok")));
        assert_eq!(map.get("key"), Some(&Edn::Str(Cow::Borrowed("5"))));
        assert_eq!(map.get("value"), Some(&Edn::Str("a \"b\"".into())));
    }

    #[test]
    fn rejects_an_unclosed_map() {
        assert!(parse_map(r#"{:process 3, :type :ok"#).is_err());
    }
}

//! Just enough EDN for Jepsen op maps: one flat map per line, such as
//! `{:process 0, :type :invoke, :f :get, :key "5", :value nil}`.

use std::collections::BTreeMap;

/// A scalar EDN value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edn {
    /// `nil`.
    Nil,
    /// An integer.
    Int(i64),
    /// A string, unescaped.
    Str(String),
    /// A keyword, without its colon.
    Keyword(String),
}

/// Parses one flat map of keyword keys to scalar values.
pub fn parse_map(text: &str) -> Result<BTreeMap<String, Edn>, String> {
    let mut cursor = Cursor {
        chars: text.trim().chars().collect(),
        at: 0,
    };
    cursor.expect('{')?;
    let mut map = BTreeMap::new();
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
        if map.insert(key.clone(), value).is_some() {
            return Err(format!("key :{key} appears twice"));
        }
    }
    cursor.skip_space();
    if cursor.at < cursor.chars.len() {
        return Err("text after the closing '}'".to_string());
    }
    Ok(map)
}

struct Cursor {
    chars: Vec<char>,
    at: usize,
}

impl Cursor {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        self.at += usize::from(found);
        found
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{c}' at column {}", self.at + 1))
        }
    }

    /// Skips whitespace and commas (commas are whitespace in EDN).
    fn skip_space(&mut self) {
        while self.peek().is_some_and(|c| c.is_whitespace() || c == ',') {
            self.at += 1;
        }
    }

    fn token(&mut self) -> String {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| !c.is_whitespace() && c != ',' && c != '}')
        {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }

    fn value(&mut self) -> Result<Edn, String> {
        match self.peek() {
            None => Err("unexpected end of line (missing '}'?)".to_string()),
            Some('"') => self.string(),
            Some(':') => {
                self.at += 1;
                let name = self.token();
                if name.is_empty() {
                    return Err(format!("empty keyword at column {}", self.at));
                }
                Ok(Edn::Keyword(name))
            }
            Some(_) => {
                let column = self.at + 1;
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

    fn string(&mut self) -> Result<Edn, String> {
        let column = self.at + 1;
        self.at += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(format!("string starting at column {column} never ends"));
            };
            self.at += 1;
            match c {
                '"' => return Ok(Edn::Str(out)),
                '\\' => {
                    let escaped = self.peek().ok_or("string ends in a backslash")?;
                    self.at += 1;
                    out.push(match escaped {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                }
                c => out.push(c),
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
        assert_eq!(map["process"], Edn::Int(3));
        assert_eq!(map["type"], Edn::Keyword("ok".into()));
        assert_eq!(map["value"], Edn::Str("a \"b\"".into()));
    }

    #[test]
    fn rejects_an_unclosed_map() {
        assert!(parse_map(r#"{:process 3, :type :ok"#).is_err());
    }
}

//! The porcupine key-value histories: one EDN op map per line,
//! `{:process P, :type :invoke|:ok|:fail|:info, :f :get|:put|:append, :key "K", :value V}`.
//!
//! An `:ok` completes the process's open operation (a get's value is what it read; `nil` reads
//! as the empty string); a `:fail` did not happen and is dropped; an `:info`, or an invocation
//! never completed, has an unknown outcome. The time of an event is its line number; blank lines
//! are skipped.

use std::collections::BTreeMap;
use std::path::Path;

use super::edn::{Edn, EdnMap, parse_map};
use super::{ReadError, read_text, some_ops};
use crate::linearizability::Operation;
use crate::linearizability::kv::{KvInput, KvOutput};

/// A key-value operation as read from a history.
pub type KvOp = Operation<KvInput, KvOutput>;

/// Reads a key-value history file; a file without a single operation is an error.
pub fn read(file: &Path) -> Result<Vec<KvOp>, ReadError> {
    read_from(file, &read_text(file)?)
}

/// The operations of `text`, the contents of `file` (which only names it in errors); a text
/// without a single operation is an error, as for [`read`].
pub fn read_from(file: &Path, text: &str) -> Result<Vec<KvOp>, ReadError> {
    some_ops(file, parse(file, text)?)
}

/// Parses the text of a key-value history; `file` only names it in errors.
pub fn parse(file: &Path, text: &str) -> Result<Vec<KvOp>, ReadError> {
    let mut ops: Vec<Option<KvOp>> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let number = index + 1;
        apply(line, number as u64, &mut ops, &mut open)
            .map_err(|message| ReadError::bad_line(file, number, message))?;
    }
    Ok(ops.into_iter().flatten().collect())
}

fn apply(
    line: &str,
    time: u64,
    ops: &mut Vec<Option<KvOp>>,
    open: &mut BTreeMap<u64, usize>,
) -> Result<(), String> {
    let map = parse_map(line)?;
    let process = match field(&map, "process")? {
        Edn::Int(p) if *p >= 0 => *p as u64,
        other => return Err(format!(":process {other:?} is not a client number")),
    };
    let kind = keyword(&map, "type")?;
    if kind == "invoke" {
        if open.contains_key(&process) {
            return Err(format!(
                "process {process} invokes while its previous operation is still open"
            ));
        }
        open.insert(process, ops.len());
        ops.push(Some(Operation {
            process,
            input: input(&map, None)?,
            output: None,
            call: time,
            ret: None,
        }));
        return Ok(());
    }
    let index = open
        .remove(&process)
        .ok_or_else(|| format!("process {process} completes an operation it never invoked"))?;
    let slot = &mut ops[index];
    let op = slot.as_mut().expect("open operations are never dropped");
    if op.input != input_for_completion(&map, &op.input)? {
        return Err(format!(
            "process {process} completes a different operation than it invoked"
        ));
    }
    match kind {
        "ok" => {
            op.output = Some(match op.input {
                KvInput::Get { .. } => KvOutput::Got(text_value(field(&map, "value")?)?),
                _ => KvOutput::Done,
            });
            op.ret = Some(time);
        }
        "fail" => *slot = None,
        "info" => {}
        other => return Err(format!("unknown :type :{other}")),
    }
    Ok(())
}

fn field<'m, 'a>(map: &'m EdnMap<'a>, name: &str) -> Result<&'m Edn<'a>, String> {
    map.get(name).ok_or_else(|| format!("missing :{name}"))
}

fn keyword<'a>(map: &EdnMap<'a>, name: &str) -> Result<&'a str, String> {
    match field(map, name)? {
        Edn::Keyword(k) => Ok(k),
        other => Err(format!(":{name} {other:?} is not a keyword")),
    }
}

fn text_value(value: &Edn) -> Result<String, String> {
    match value {
        Edn::Nil => Ok(String::new()),
        Edn::Str(s) => Ok(s.to_string()),
        Edn::Int(i) => Ok(i.to_string()),
        Edn::Keyword(k) => Err(format!("value :{k} is not a string")),
    }
}

/// The operation a line names; `value` is the line's `:value`, or what stands for it.
fn input(map: &EdnMap<'_>, value: Option<&Edn<'_>>) -> Result<KvInput, String> {
    let key = match field(map, "key")? {
        Edn::Str(k) => k.to_string(),
        Edn::Int(i) => i.to_string(),
        other => return Err(format!(":key {other:?} is not a string")),
    };
    let value = || match value {
        Some(value) => text_value(value),
        None => field(map, "value").and_then(text_value),
    };
    match keyword(map, "f")? {
        "get" => Ok(KvInput::Get { key }),
        "put" => Ok(KvInput::Put {
            key,
            value: value()?,
        }),
        "append" => Ok(KvInput::Append {
            key,
            value: value()?,
        }),
        other => Err(format!("unknown :f :{other}")),
    }
}

/// The input a completion names: a get's completion carries the value read, not the call's.
fn input_for_completion(map: &EdnMap<'_>, invoked: &KvInput) -> Result<KvInput, String> {
    match (keyword(map, "f")?, invoked) {
        ("get", KvInput::Get { .. }) => input(map, Some(&Edn::Nil)),
        _ => input(map, None),
    }
}

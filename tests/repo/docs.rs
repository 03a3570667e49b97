//! The design document is in `docs/`, and everything that cites it — code comments, error
//! messages, READMEs, the docs' own links — names a page and a section that exist.

use std::collections::BTreeSet;
use std::fs;

use crate::tree::{root, text_files};

/// A citation: `docs/<page>.md` or `docs/<page>.md#<anchor>`, as the code writes them.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Citation {
    page: String,
    anchor: Option<String>,
}

/// Every `docs/<page>.md[#anchor]` in `text`, and in a file under `docs/` also every relative
/// Markdown link `(<page>.md[#anchor])` and in-page link `(#anchor)`.
fn citations(text: &str, in_docs: Option<&str>) -> Vec<Citation> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        if let Some(citation) = read_citation(&text[at + "docs/".len()..]) {
            found.push(citation);
        }
    }
    if let Some(page) = in_docs {
        for (at, _) in text.match_indices("](") {
            let target = &text[at + 2..];
            if let Some(anchor) = target.strip_prefix('#') {
                let anchor: String = anchor.chars().take_while(|c| is_slug_char(*c)).collect();
                found.push(Citation {
                    page: page.to_owned(),
                    anchor: Some(anchor),
                });
            } else if !target.starts_with("http") && !target.starts_with("..") {
                found.extend(read_citation(target));
            }
        }
    }
    found
}

/// Reads `<page>.md[#anchor]` at the start of `rest`; `None` when it is not a page name.
fn read_citation(rest: &str) -> Option<Citation> {
    let page: String = rest.chars().take_while(|c| is_slug_char(*c)).collect();
    let after = rest[page.len()..].strip_prefix(".md")?;
    if page.is_empty() {
        return None;
    }
    let anchor = after.strip_prefix('#').map(|a| {
        a.chars()
            .take_while(|c| is_slug_char(*c))
            .collect::<String>()
    });
    Some(Citation {
        page: format!("{page}.md"),
        anchor: anchor.filter(|a| !a.is_empty()),
    })
}

fn is_slug_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
}

/// The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as `-`.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut anchors = BTreeSet::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            let heading = line.trim_start_matches('#').trim();
            anchors.insert(slug(heading));
        }
    }
    anchors
}

fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn the_design_document_is_in_the_repository() {
    let index = root().join("docs/README.md");
    let text = fs::read_to_string(&index).expect("docs/README.md, the design document's index");
    for page in [
        "architecture.md",
        "contracts.md",
        "checks.md",
        "world.md",
        "exit-codes.md",
    ] {
        assert!(text.contains(page), "docs/README.md does not list {page}");
    }
}

#[test]
fn every_cited_page_and_section_of_docs_exists() {
    let mut broken = Vec::new();
    let mut cited = 0;
    for (path, text) in text_files() {
        let in_docs = path
            .starts_with("docs")
            .then(|| path.file_name().unwrap().to_string_lossy().into_owned());
        for citation in citations(&text, in_docs.as_deref()) {
            cited += 1;
            let page = root().join("docs").join(&citation.page);
            let Ok(markdown) = fs::read_to_string(&page) else {
                broken.push(format!(
                    "{}: docs/{} does not exist",
                    path.display(),
                    citation.page
                ));
                continue;
            };
            if let Some(anchor) = &citation.anchor
                && !anchors(&markdown).contains(anchor)
            {
                broken.push(format!(
                    "{}: docs/{} has no section #{anchor}",
                    path.display(),
                    citation.page
                ));
            }
        }
    }
    assert!(
        cited > 100,
        "only {cited} citations of docs/ found: is the walk reading the sources?"
    );
    assert!(
        broken.is_empty(),
        "{} broken citations:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug("The authority's grace period"),
        "the-authoritys-grace-period"
    );
    assert_eq!(slug("LIN-LEASE"), "lin-lease");
    assert_eq!(
        slug("F1 Stop-the-world pause longer than the TTL"),
        "f1-stop-the-world-pause-longer-than-the-ttl"
    );
}

#[test]
fn a_citation_of_a_missing_section_is_found() {
    // Built at run time, so that this file does not itself cite a missing section.
    let text = format!("see {0}checks.md#no-such-rule and {0}world.md.", "docs/");
    let found = citations(&text, None);
    assert_eq!(
        found,
        vec![
            Citation {
                page: "checks.md".into(),
                anchor: Some("no-such-rule".into())
            },
            Citation {
                page: "world.md".into(),
                anchor: None
            },
        ]
    );
    let checks = fs::read_to_string(root().join("docs/checks.md")).expect("docs/checks.md");
    assert!(!anchors(&checks).contains("no-such-rule"));
    assert!(anchors(&checks).contains("excl"));
}

//! The engine's modules depend on each other one way only: a module that imports another is
//! never imported back, directly or through others. A cycle is how a record starts bouncing
//! between two files again, so it fails here rather than in review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `src/` with the modules its non-test code names as `crate::<module>`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may reach anywhere; the map is about the code that ships.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_owned();
            sources.insert(name, code);
        }
    }
    let modules: BTreeSet<String> = sources.keys().filter(|m| *m != "lib").cloned().collect();
    sources
        .iter()
        .filter(|(m, _)| *m != "lib")
        .map(|(m, code)| {
            let named = code
                .match_indices("crate::")
                .map(|(at, _)| {
                    code[at + "crate::".len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
                })
                .filter(|n: &String| modules.contains(n) && n != m)
                .collect();
            (m.clone(), named)
        })
        .collect()
}

/// A cycle through `from`, if there is one, as the modules along it.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    fn walk(g: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, start: &str) -> bool {
        let last = path.last().cloned().unwrap_or_default();
        for next in g.get(&last).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if !path.contains(next) {
                path.push(next.clone());
                if walk(g, path, start) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_owned()];
    walk(graph, &mut path, from).then_some(path)
}

#[test]
fn the_engines_modules_import_each_other_without_a_cycle() {
    let graph = imports();
    assert!(graph.contains_key("decide") && graph.contains_key("driver"), "the map read no modules: {graph:?}");
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module) {
            panic!("the engine's modules import each other in a cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
        ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]
    .into();
    assert_eq!(cycle_from(&graph, "a"), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}

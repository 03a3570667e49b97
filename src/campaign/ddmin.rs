//! Delta debugging: Zeller & Hildebrandt's `ddmin` ("Simplifying and isolating
//! failure-inducing input", IEEE TSE 28(2), 2002), over any list.
//!
//! Given a list for which `fails` holds, it returns a sublist (order kept) for which `fails`
//! still holds and from which no single element can be removed without losing the failure
//! (1-minimal), trying complements of ever smaller chunks first. The shrinker runs it over a
//! run file's faults and scripted calls.

/// Reduces `items` to a 1-minimal sublist that still `fails`.
///
/// `fails` is called on candidate sublists only (never on `items` itself, which the caller
/// knows fails) and at most `max_tests` times; when the budget runs out the smallest failing
/// list found so far is returned. Returns the list and how many tests ran.
pub fn ddmin<T: Clone>(
    items: Vec<T>,
    max_tests: u32,
    mut fails: impl FnMut(&[T]) -> bool,
) -> (Vec<T>, u32) {
    let mut current = items;
    let mut tests = 0u32;
    let mut granularity = 2usize;
    while current.len() >= 2 {
        let chunks = split(&current, granularity);
        let mut reduced = false;
        // Each subset alone, then each complement (ddmin's two reductions).
        for chunk in &chunks {
            if tests >= max_tests {
                return (current, tests);
            }
            tests += 1;
            if fails(chunk) {
                current = chunk.clone();
                granularity = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && granularity > 2 {
            for skip in 0..chunks.len() {
                if tests >= max_tests {
                    return (current, tests);
                }
                let complement: Vec<T> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .flat_map(|(_, chunk)| chunk.iter().cloned())
                    .collect();
                tests += 1;
                if fails(&complement) {
                    current = complement;
                    granularity = (granularity - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    if current.len() == 1 && tests < max_tests {
        tests += 1;
        if fails(&[]) {
            current.clear();
        }
    }
    (current, tests)
}

/// `items` in `n` contiguous chunks of near-equal size (the first ones one longer).
fn split<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let n = n.min(items.len()).max(1);
    let (size, extra) = (items.len() / n, items.len() % n);
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let len = size + usize::from(i < extra);
        chunks.push(items[start..start + len].to_vec());
        start += len;
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_single_culprit() {
        let (min, _) = ddmin((0..100).collect(), 1_000, |xs: &[u32]| xs.contains(&37));
        assert_eq!(min, vec![37]);
    }

    #[test]
    fn finds_a_pair_that_fails_only_together_in_order() {
        let (min, _) = ddmin((0..64).collect(), 1_000, |xs: &[u32]| {
            xs.contains(&5) && xs.contains(&50)
        });
        assert_eq!(min, vec![5, 50]);
    }

    #[test]
    fn result_is_one_minimal() {
        // Fails when at least three multiples of 7 remain.
        let fails = |xs: &[u32]| xs.iter().filter(|x| *x % 7 == 0).count() >= 3;
        let (min, _) = ddmin((1..60).collect(), 10_000, fails);
        assert_eq!(min.len(), 3);
        assert!(min.iter().all(|x| x % 7 == 0));
        for i in 0..min.len() {
            let mut smaller = min.clone();
            smaller.remove(i);
            assert!(!fails(&smaller));
        }
    }

    #[test]
    fn an_empty_list_that_fails_is_found() {
        let (min, _) = ddmin(vec![1, 2, 3], 100, |_: &[u32]| true);
        assert!(min.is_empty());
    }

    #[test]
    fn the_budget_bounds_the_tests_and_keeps_a_failing_list() {
        let mut calls = 0;
        let (min, tests) = ddmin((0..1000).collect(), 5, |xs: &[u32]| {
            calls += 1;
            xs.contains(&999)
        });
        assert_eq!(tests, 5);
        assert_eq!(calls, 5);
        assert!(min.contains(&999));
    }

    #[test]
    fn split_covers_every_item_once_in_order() {
        let chunks = split(&[1, 2, 3, 4, 5, 6, 7], 3);
        assert_eq!(chunks, vec![vec![1, 2, 3], vec![4, 5], vec![6, 7]]);
    }
}

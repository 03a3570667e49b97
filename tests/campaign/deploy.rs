//! `deploy/k8s/campaign-job.yaml` (issue 21, "Nightly campaigns"): every document reads as
//! the Kubernetes object it claims to be, with no field k8s-openapi does not know (its types
//! ignore unknown fields, so a misspelt one is caught by reading the object back), and the
//! shard count, the `--shard` expression and the volume claim agree across the documents.

use std::path::Path;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

const MANIFEST: &str = "deploy/k8s/campaign-job.yaml";

/// The manifest's documents as JSON values.
fn documents() -> Vec<serde_json::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(MANIFEST);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{MANIFEST}: {e}"))
}

/// `document` as a `T`, asserting that writing it back gives the same document: any field
/// the type does not know (k8s-openapi ignores unknown fields) shows as a difference.
fn strict<T: serde::de::DeserializeOwned + serde::Serialize>(document: &serde_json::Value) -> T {
    let object: T = serde_json::from_value(document.clone())
        .unwrap_or_else(|e| panic!("{MANIFEST}: {e}\n{document:#}"));
    let back = serde_json::to_value(&object).unwrap();
    assert_eq!(
        &back, document,
        "{MANIFEST}: a field is unknown to k8s-openapi or misspelt (left: as read back)"
    );
    object
}

/// The manifest's claim, shard Job and merge Job, in that order.
fn manifest() -> (PersistentVolumeClaim, Job, Job) {
    let documents = documents();
    let kinds: Vec<&str> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["PersistentVolumeClaim", "Job", "Job"]);
    (
        strict(&documents[0]),
        strict(&documents[1]),
        strict(&documents[2]),
    )
}

fn spec(job: &Job) -> &JobSpec {
    job.spec.as_ref().unwrap()
}

/// The single container's `sh -c` script.
fn script(job: &Job) -> String {
    let pod = spec(job).template.spec.as_ref().unwrap();
    assert_eq!(pod.containers.len(), 1);
    let command = pod.containers[0].command.clone().unwrap();
    assert_eq!(command[..2], ["sh", "-c"], "{command:?}");
    assert_eq!(command.len(), 3, "{command:?}");
    command[2].clone()
}

/// The claim names of the pod's volumes mounted by its container.
fn mounted_claims(job: &Job) -> Vec<String> {
    let pod = spec(job).template.spec.as_ref().unwrap();
    let volumes = pod.volumes.as_ref().unwrap();
    let mounts = pod.containers[0].volume_mounts.as_ref().unwrap();
    assert!(!mounts.is_empty());
    mounts
        .iter()
        .map(|mount| {
            let volume = volumes
                .iter()
                .find(|v| v.name == mount.name)
                .unwrap_or_else(|| panic!("mount {} names no volume", mount.name));
            let claim = volume.persistent_volume_claim.as_ref().unwrap();
            claim.claim_name.clone()
        })
        .collect()
}

#[test]
fn the_shards_job_is_indexed_with_one_shard_per_index() {
    let (claim, shards, merge) = manifest();
    let spec = spec(&shards);
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    let n = spec.completions.unwrap();
    assert!(n > 1, "completions {n}");
    assert!(spec.parallelism.is_some_and(|p| (1..=n).contains(&p)));
    // Retries per index; the API refuses backoffLimitPerIndex outside Indexed mode, and a
    // backoffLimit beside it would stop every index at once.
    assert!(spec.backoff_limit_per_index.is_some());
    assert_eq!(spec.backoff_limit, None);
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    // JOB_COMPLETION_INDEX is 0-based, --shard 1-based, and N is the completions.
    let script = script(&shards);
    let shard = format!("$((JOB_COMPLETION_INDEX+1))/{n}");
    assert!(script.contains(&shard), "{script}");
    assert!(script.contains("leasesim campaign --shard"), "{script}");
    assert!(script.contains("--out \"$out\""), "{script}");
    assert!(
        script.contains("out=\"/reports/shard-$((JOB_COMPLETION_INDEX+1))\""),
        "{script}"
    );

    // Both Jobs mount the claim the manifest makes, at the same place.
    let name = claim.metadata.name.clone().unwrap();
    assert_eq!(mounted_claims(&shards), std::slice::from_ref(&name));
    assert_eq!(mounted_claims(&merge), [name]);
    let mount_path = |job: &Job| {
        let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        pod.containers[0].volume_mounts.as_ref().unwrap()[0]
            .mount_path
            .clone()
    };
    assert_eq!(mount_path(&shards), "/reports");
    assert_eq!(mount_path(&merge), "/reports");
}

#[test]
fn the_merge_job_merges_every_shard_folder() {
    let (_, shards, merge) = manifest();
    let n = spec(&shards).completions.unwrap();
    assert_eq!(spec(&merge).completion_mode, None);
    let script = script(&merge);
    let folders: Vec<String> = (1..=n).map(|k| format!("/reports/shard-{k}")).collect();
    assert_eq!(
        script,
        format!(
            "leasesim report merge {} --out /reports/nightly",
            folders.join(" ")
        )
    );
}

//! The container image builds the whole workspace, so its Dockerfile must copy every
//! workspace member (a missing one fails `docker build` at `cargo build`, which CI cannot
//! run: there is no Docker engine here).

use std::path::Path;

fn workspace_members(manifest: &str) -> Vec<String> {
    let start = manifest.find("members = [").expect("the workspace manifest lists its members");
    let list = &manifest[start + "members = [".len()..];
    let list = &list[..list.find(']').expect("the member list ends")];
    list.split(',').map(|m| m.trim().trim_matches('"').to_string()).filter(|m| !m.is_empty()).collect()
}

#[test]
fn dockerfile_copies_every_workspace_member() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("cli/ is in the workspace root");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let dockerfile = std::fs::read_to_string(root.join("deploy/Dockerfile")).expect("read deploy/Dockerfile");
    let members = workspace_members(&manifest);
    assert!(members.len() >= 6, "members parsed from Cargo.toml: {members:?}");
    let copied: Vec<&str> = dockerfile
        .lines()
        .filter_map(|l| l.trim().strip_prefix("COPY "))
        .flat_map(|rest| rest.split_whitespace().next())
        .collect();
    let missing: Vec<&String> = members.iter().filter(|m| !copied.contains(&m.as_str())).collect();
    assert!(missing.is_empty(), "deploy/Dockerfile does not COPY the workspace members {missing:?}");
}

//! Compiles `proto/keima.proto` with protox (pure Rust: no `protoc` on the machine).

fn main() {
    let files = ["proto/keima.proto"];
    for f in files {
        // protox emits no rerun-if-changed of its own.
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["proto"]).expect("proto/keima.proto does not compile");
    tonic_prost_build::configure().compile_fds(fds).expect("code generation for keima.proto failed");
}

//! Prints a scaling family's scenario (benches/families): `cargo run --release
//! --example family -- FAMILY N > file.json`, then time `asksim run file.json`.
//! Families: tie, loss, children, cancel_tree, waterfall_D, late.

#[path = "../benches/families/mod.rs"]
mod families;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(family), Some(n)) = (
        args.first().and_then(|f| families::Family::named(f)),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: family FAMILY N   (FAMILY: tie, loss, children, cancel_tree, waterfall_D, late)");
        std::process::exit(2);
    };
    println!("{}", family.scenario(n));
}

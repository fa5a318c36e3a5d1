//! Placeholder until the SPEC §8 benches land: measures argument validation.
use criterion::{Criterion, criterion_group, criterion_main};

fn prepare(c: &mut Criterion) {
    let config = asksim::tool::ToolConfig::timed(asksim::tool::Timeout::Window(30.0));
    let args = r#"{"questions":[{"id":"cleanup","question":"Proceed?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":5}"#;
    c.bench_function("prepare_timed", |b| {
        b.iter(|| config.prepare(std::hint::black_box(args)))
    });
}

criterion_group!(benches, prepare);
criterion_main!(benches);

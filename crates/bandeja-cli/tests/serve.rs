//! `bandeja serve` as a real process over a real SQLite file: it says where it listens
//! (one JSON line with `--json`), answers `/health` and `/boxes`, and refuses a
//! non-loopback address without a token.

mod common;

use common::databases::sqlite_filled;
use common::serving::Serving;
use common::{bandeja, seed, SEEDED};

#[test]
fn serve_answers_health_and_boxes_on_the_address_it_prints() {
    let (db, _ids) = sqlite_filled(seed);
    let server = Serving::start(&db.args(), &[]);
    let (addr, listening) = (&server.addr, &server.listening);
    assert_eq!(listening["token_generated"], true, "{listening}");
    let dashboard = listening["dashboard_url"].as_str().expect("dashboard_url");
    assert!(
        dashboard.starts_with(&format!("http://{addr}/#token=")),
        "{dashboard}"
    );

    let health = server.get("/health");
    let (status, boxes) = server.get("/boxes");
    assert_eq!(status, 200, "{boxes}");
    let boxes: serde_json::Value = serde_json::from_str(&boxes).expect("boxes JSON");
    assert_eq!(health.0, 200, "{}", health.1);
    assert!(health.1.contains("UP"), "{}", health.1);
    assert!(
        boxes.to_string().contains(&format!("\"failed\":{SEEDED}")),
        "{boxes:#}"
    );
}

#[test]
fn serve_refuses_a_public_address_without_a_token() {
    let (db, ()) = sqlite_filled(async |_| {});
    let run =
        bandeja(&[&["serve", "--listen", "0.0.0.0:0"][..], &db.args()].concat()).expect_code(2);
    assert!(run.stderr.contains("without an admin token"), "{run:#?}");
}

//! `bandeja sagas list` and `bandeja sagas show` against a real SQLite file where a real
//! saga ran: an order whose stock ran short after the payment, so the charge was refunded.

mod common;

use std::time::Duration;

use bandeja_conformance::fixtures::saga::{run_order_saga, Answer, Participants};
use bandeja_core::saga::{SagaId, SagaStatus};
use common::databases::sqlite_filled;
use common::run_on;

#[test]
fn sagas_list_and_show_a_compensated_saga_with_its_history() {
    let (database, saga) = sqlite_filled(async |store| {
        let participants = Participants::new(&[("reserve", &[Answer::Refuse])], Duration::ZERO);
        run_order_saga(store, &participants, Duration::from_secs(30)).await
    });
    assert_eq!(saga.status, SagaStatus::Compensated);
    let db = database.args();
    let id = saga.id.to_string();

    let text = run_on(&db, &["sagas", "list"]).expect_code(0);
    assert!(text.stdout.starts_with("STARTED"), "{text:#?}");
    assert!(
        text.stdout.contains(&id) && text.stdout.contains("COMPENSATED"),
        "{text:#?}"
    );
    assert!(text.stdout.contains("out of stock"), "{text:#?}");
    let listed = run_on(&db, &["--json", "sagas", "list", "--status", "compensated"])
        .expect_code(0)
        .json();
    assert_eq!(listed[0]["id"], id.as_str());
    let none = run_on(&db, &["--json", "sagas", "list", "--type", "other"])
        .expect_code(0)
        .json();
    assert_eq!(none, serde_json::json!([]));

    let shown = run_on(&db, &["sagas", "show", &id]).expect_code(0);
    for needle in [
        "COMPENSATED",
        "history (oldest first)",
        "compensation",
        "succeeded",
    ] {
        assert!(shown.stdout.contains(needle), "{needle}: {shown:#?}");
    }
    assert!(
        shown.stdout.contains("\"charge_id\":\"ch-7\""),
        "{shown:#?}"
    );

    let bad = run_on(&db, &["sagas", "list", "--status", "done"]).expect_code(2);
    assert!(bad.stderr.contains("compensated"), "{bad:#?}");
    let unknown = SagaId::new().to_string();
    let missing = run_on(&db, &["sagas", "show", &unknown]).expect_code(3);
    assert!(missing.stderr.contains("no saga"), "{missing:#?}");
}

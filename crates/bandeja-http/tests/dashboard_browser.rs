//! The dashboard in a real browser: Debian's headless Chromium, driven through WebDriver
//! (chromedriver), against the server as `bandeja serve` runs it and nested in an
//! application's router. A FAILED message shows with its last error, its retries and its
//! lease takeovers apart, the boxes with their rows taken over; a row's Retry button sends
//! that row back (and no other subscriber's) and the running worker completes it, which the
//! page shows. The message browser filters by status and searches, pages with Older / Newer
//! and totals, shows one message (payload, headers, attempts), discards with a reason into
//! the archive, draws the last hour, and fits a 420 px wide screen. The Replay outbox
//! control counts, asks and sends COMPLETED outbox messages again.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (`apt-get install chromium
//! chromium-driver`; `.ci/run` installs them), or `CHROMIUM` / `CHROMEDRIVER` pointing
//! elsewhere. Without them the test fails when `CI=true` and is skipped otherwise.

mod common;

use bandeja_core::store::{Outcome, Resolution, Store};
use bandeja_core::testing::eventually;
use bandeja_core::{BoxKind, MessageStatus};
use common::browser::{
    browser, chromedriver, click, failed_for_two_subscribers, open, orders, row_status, run,
    serve_as_bandeja_serve, serve_router, text_of, wait_text, DESKTOP, TOKEN,
};
use common::{sqlite_store, start_with_a_failed_order, status_of, two_rows_taken_over, WAIT};
use fantoccini::{Client, Locator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_button_sends_a_failed_message_back_and_the_page_shows_it_completed() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    // Before the workers start: an outbox row taken over once and then FAILED, and one taken
    // over and then COMPLETED (which no counter keeps).
    let (taken_failed, taken_done) = two_rows_taken_over(&store).await;
    let done = Outcome {
        id: taken_done,
        subscriber: None,
        resolution: Resolution::Completed,
    };
    store
        .resolve(BoxKind::OutboxEvents, "alive", &[done])
        .await
        .expect("complete the held row");
    let (running, event) = start_with_a_failed_order(&store, 42).await;

    let served = serve_as_bandeja_serve(store.clone()).await;

    let client = open(&driver, DESKTOP, &served.dashboard()).await;
    let id = event.id.to_string();
    let button_css = format!("#rows button.retry[data-id=\"{id}\"]");
    let button = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(&button_css))
        .await
        .expect("the FAILED message is listed with a Retry button");
    let error = text_of(&client, &format!("#rows tr[data-id=\"{id}\"] td.error")).await;
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("payment service refused order 42")),
        "last error shown: {error:?}"
    );
    let failed_count = text_of(
        &client,
        "#boxes tr[data-box=\"inbox_events\"] td:nth-child(4)",
    )
    .await;
    assert_eq!(failed_count.as_deref(), Some("1"));
    let retries_and_takeovers = |id: String| {
        let client = &client;
        async move {
            let row = format!("#rows tr[data-id=\"{id}\"]");
            (
                text_of(client, &format!("{row} td.retries")).await,
                text_of(client, &format!("{row} td.takeovers")).await,
            )
        }
    };
    assert_eq!(
        retries_and_takeovers(taken_failed.to_string()).await,
        (Some("0".to_owned()), Some("1".to_owned())),
        "the row taken over shows its takeover beside its retries"
    );
    assert_eq!(
        retries_and_takeovers(id.clone()).await,
        (Some("0".to_owned()), Some("0".to_owned()))
    );
    let taken_over = |box_name: &'static str| {
        let client = &client;
        async move {
            text_of(
                client,
                &format!("#boxes tr[data-box=\"{box_name}\"] td.taken-over"),
            )
            .await
        }
    };
    // The counters load on their own: wait for them.
    wait_text(
        &client,
        "#boxes tr[data-box=\"outbox_events\"] td.taken-over",
        |t| t == "1",
    )
    .await;
    assert_eq!(taken_over("outbox_events").await.as_deref(), Some("1"));
    assert_eq!(taken_over("inbox_events").await.as_deref(), Some("0"));
    let address = client.current_url().await.expect("url");
    assert!(
        !address.as_str().contains("token="),
        "the token leaves the address bar: {address}"
    );

    button.click().await.expect("click Retry");
    let status_css = format!("#retried tr[data-id=\"{id}\"] td.status");
    let shown = eventually(WAIT, || async {
        text_of(&client, &status_css)
            .await
            .filter(|s| s.contains("COMPLETED"))
    })
    .await
    .expect("the page shows the retried message COMPLETED");
    assert!(shown.contains("billing"), "{shown}");
    assert_eq!(
        status_of(&store, BoxKind::InboxEvents, event.id).await,
        Some(MessageStatus::Completed)
    );
    eventually(WAIT, || async {
        client
            .find(Locator::Css(&button_css))
            .await
            .is_err()
            .then_some(())
    })
    .await
    .expect("the message leaves the FAILED list");
    let notice = text_of(&client, "#notice").await.unwrap_or_default();
    assert!(notice.contains("Retried"), "{notice}");

    client.close().await.expect("close the browser");
    served.stop().await;
    running.shutdown().await;
}

/// Waits until the page shows a `confirm()` dialog, checks its text and accepts it.
async fn accept_confirm(client: &Client, needle: &str) {
    let text = eventually(WAIT, || async { client.get_alert_text().await.ok() })
        .await
        .expect("the page asks for confirmation");
    assert!(text.contains(needle), "{text}");
    client.accept_alert().await.expect("accept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_outbox_control_counts_asks_and_sends_the_messages_again() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, failed) = start_with_a_failed_order(&store, 5).await;
    running.shutdown().await;
    // Its outbox row is COMPLETED (sent); the inbox row FAILED is not the outbox's business.
    assert_eq!(
        status_of(&store, BoxKind::OutboxEvents, failed.id).await,
        Some(MessageStatus::Completed)
    );

    let served = serve_as_bandeja_serve(store.clone()).await;
    let client = open(&driver, DESKTOP, &served.dashboard()).await;
    let kind = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#replay-type"))
        .await
        .expect("the replay control");
    kind.send_keys("http_test.OrderPlaced")
        .await
        .expect("type the message type");
    client
        .find(Locator::Css("#replay-since"))
        .await
        .expect("since")
        .send_keys("1h")
        .await
        .expect("type the window");
    client
        .find(Locator::Css("#replay-outbox"))
        .await
        .expect("the Replay button")
        .click()
        .await
        .expect("click Replay");
    accept_confirm(&client, "Send 1 outbox message(s) again?").await;
    let note = eventually(WAIT, || async {
        text_of(&client, "#replay-note")
            .await
            .filter(|t| t.starts_with("Replayed"))
    })
    .await
    .expect("the page says what it replayed");
    assert!(note.contains("Replayed 1 outbox message(s)"), "{note}");
    assert_eq!(
        status_of(&store, BoxKind::OutboxEvents, failed.id).await,
        Some(MessageStatus::Pending),
        "sent again: PENDING until a worker relays it"
    );

    // No type and no window: the page asks before sending everything.
    kind.clear().await.expect("clear the type");
    client
        .find(Locator::Css("#replay-since"))
        .await
        .expect("since")
        .clear()
        .await
        .expect("clear the window");
    client
        .find(Locator::Css("#replay-outbox"))
        .await
        .expect("the Replay button")
        .click()
        .await
        .expect("click Replay");
    accept_confirm(&client, "EVERY completed outbox message").await;
    eventually(WAIT, || async {
        text_of(&client, "#replay-note")
            .await
            .filter(|t| t.contains("No COMPLETED outbox message matches"))
    })
    .await
    .expect("nothing left to replay: the one row is PENDING");

    client.close().await.expect("close the browser");
    served.stop().await;
}

/// The subscriptions panel with the router mounted under a prefix (`/ops`): a subscription
/// the old version registered and nobody runs any more is flagged as waiting beside the
/// running one; its Retire button asks discard or keep, and keeping marks its rows FAILED
/// with the reason, after which the panel no longer lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subscriptions_panel_flags_a_waiting_subscription_and_retires_it_under_a_prefix() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let version = |subscriber: &str| {
        bandeja_core::Bandeja::builder(store.clone())
            .config(bandeja_conformance::fixtures::fast_config())
            .on_event::<common::OrderPlaced, _>(subscriber, common::Flaky::default())
            .build()
            .expect("valid runtime")
    };
    version("billing")
        .start()
        .await
        .expect("start the old version")
        .shutdown()
        .await;
    let new = version("audit");
    let running = new.start().await.expect("start the new version");
    let event = common::order(7);
    new.emit(&event).await.expect("emit");

    let served = serve_router(store.clone(), "/ops").await;

    let url = served.url(&format!("/ops/dashboard#token={TOKEN}"));
    let client = open(&driver, DESKTOP, &url).await;
    let billing = "#subscriptions tr[data-subscriber=\"billing\"]";
    let state = eventually(WAIT, || async {
        text_of(&client, &format!("{billing} td.state"))
            .await
            .filter(|s| s == "waiting")
    })
    .await
    .expect("the subscription nobody runs is listed as waiting");
    assert_eq!(state, "waiting");
    assert_eq!(
        text_of(&client, &format!("{billing} td.pending"))
            .await
            .as_deref(),
        Some("1")
    );
    assert_eq!(
        text_of(&client, &format!("{billing} td.processes"))
            .await
            .as_deref(),
        Some("none")
    );
    let audit = "#subscriptions tr[data-subscriber=\"audit\"]";
    assert_eq!(
        text_of(&client, &format!("{audit} td.state"))
            .await
            .as_deref(),
        Some("running")
    );
    let processes = text_of(&client, &format!("{audit} td.processes"))
        .await
        .unwrap_or_default();
    assert!(
        processes.contains(&format!("(pid {})", std::process::id())),
        "{processes}"
    );
    let running_retire = client
        .find(Locator::Css(&format!("{audit} button.retire")))
        .await
        .expect("a Retire button");
    assert!(
        running_retire
            .attr("disabled")
            .await
            .expect("attribute")
            .is_some(),
        "a subscription live processes run cannot be retired from the page"
    );
    // The rest of the page loads under the prefix too.
    assert!(
        eventually(WAIT, || async {
            text_of(
                &client,
                "#boxes tr[data-box=\"inbox_events\"] td:nth-child(1)",
            )
            .await
        })
        .await
        .is_ok(),
        "the boxes load under the prefix"
    );

    client
        .find(Locator::Css(&format!("{billing} button.retire")))
        .await
        .expect("billing's Retire button")
        .click()
        .await
        .expect("click Retire");
    let confirm = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#retire-confirm"))
        .await
        .expect("the confirmation");
    let question = text_of(&client, "#retire-question")
        .await
        .unwrap_or_default();
    assert!(
        question.contains("billing") && question.contains("1 pending"),
        "{question}"
    );
    assert!(
        confirm.attr("disabled").await.expect("attribute").is_some(),
        "nothing happens before discard or keep is chosen"
    );
    client
        .find(Locator::Css("#retire-dialog input[value=\"keep\"]"))
        .await
        .expect("the keep choice")
        .click()
        .await
        .expect("choose keep");
    confirm.click().await.expect("confirm");
    eventually(WAIT, || async {
        client
            .find(Locator::Css(billing))
            .await
            .is_err()
            .then_some(())
    })
    .await
    .expect("the retired subscription leaves the panel");
    let notice = text_of(&client, "#notice").await.unwrap_or_default();
    assert!(notice.contains("Retired billing"), "{notice}");
    let kept: Vec<(MessageStatus, Option<String>)> =
        bandeja_core::store::Inspect::rows(&store, BoxKind::InboxEvents)
            .await
            .expect("rows")
            .into_iter()
            .filter(|r| r.message.subscriber.as_deref() == Some("billing"))
            .map(|r| (r.message.status, r.message.last_error))
            .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, MessageStatus::Failed);
    assert!(
        kept[0]
            .1
            .as_deref()
            .is_some_and(|e| e.contains("retired by an operator")),
        "{kept:?}"
    );

    client.close().await.expect("close the browser");
    served.stop().await;
    running.shutdown().await;
}

/// The keys (`id|box|subscriber`) of the rows the browser lists, top to bottom.
async fn listed_keys(client: &Client) -> Vec<String> {
    let keys = run(
        client,
        "return Array.from(document.querySelectorAll('#rows tr'), (tr) => tr.dataset.key);",
    )
    .await;
    serde_json::from_value(keys).expect("a list of keys")
}

/// Whether the element matching `css` is disabled.
async fn disabled(client: &Client, css: &str) -> bool {
    let script = format!("return document.querySelector({css:?}).disabled;");
    run(client, &script).await == serde_json::Value::Bool(true)
}

/// Serves the router nested as the README shows, `nest("/bandeja", …)`: the page at
/// `/bandeja` (no trailing slash) and at `/bandeja/dashboard` calls the endpoints under
/// `/bandeja`, and so does a router nested at `/bandeja/`, at `/bandeja/`. Its PROCESSING
/// tab and workers panel show the worker holding a row and its lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_nested_under_a_prefix_shows_health_and_counters_with_or_without_a_slash() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, _failed) = orders(&store, &[1], &[2]).await;
    running.shutdown().await;
    // An outbox row FAILED and one PROCESSING, held by worker `alive`.
    two_rows_taken_over(&store).await;
    let bare = serve_router(store.clone(), "/bandeja").await;
    let slashed = serve_router(store.clone(), "/bandeja/").await;

    let client = browser(&driver, DESKTOP).await;
    for url in [
        bare.url("/bandeja"),
        bare.url("/bandeja/dashboard"),
        slashed.url("/bandeja/"),
    ] {
        client
            .goto(&format!("{url}#token={TOKEN}"))
            .await
            .expect("open the dashboard");
        wait_text(&client, "#health", |t| t == "health: UP").await;
        wait_text(
            &client,
            "#boxes tr[data-box=\"inbox_events\"] td:nth-child(4)",
            |t| t == "1",
        )
        .await;
        // The listing (which needs the token) loads under the prefix too.
        wait_text(&client, "#range", |t| t == "1–2 of 2").await;
        let address = client.current_url().await.expect("url");
        assert!(!address.as_str().contains("token="), "{address}");
    }
    // The PROCESSING tab shows who holds each row and until when; the workers panel the
    // leases per box.
    click(&client, "#status-tabs button[data-status=\"PROCESSING\"]").await;
    let holder = wait_text(
        &client,
        "#rows tr[data-status=\"PROCESSING\"] .holder",
        |t| t.starts_with("held by alive, lease until "),
    )
    .await;
    assert!(holder.contains("Z · "), "{holder}");
    wait_text(
        &client,
        "#workers tr[data-box=\"outbox_events\"] td.leases",
        |t| t.starts_with("alive: 1 row(s), lease until "),
    )
    .await;

    client.close().await.expect("close the browser");
    bare.stop().await;
    slashed.stop().await;
}

/// A message FAILED for two subscribers: the Retry button of billing's row sends back
/// billing's row only; shipping's stays FAILED, and the page keeps listing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rows_retry_sends_back_that_row_and_not_the_other_subscribers() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, event) = failed_for_two_subscribers(&store, 9).await;
    let served = serve_as_bandeja_serve(store.clone()).await;

    let client = open(&driver, DESKTOP, &served.dashboard()).await;
    let id = event.id;
    let billing = format!("{id}|inbox_events|billing");
    let shipping = format!("{id}|inbox_events|shipping");
    wait_text(&client, "#range", |t| t == "1–2 of 2").await;
    click(
        &client,
        &format!("#rows tr[data-key=\"{billing}\"] button.retry"),
    )
    .await;
    common::browser::wait_for_row(&store, id, "billing", MessageStatus::Completed).await;
    let notice = wait_text(&client, "#notice", |t| t.starts_with("Retried")).await;
    assert!(
        notice.contains("inbox_events / billing): 1 row(s)"),
        "{notice}"
    );
    assert_eq!(
        row_status(&store, BoxKind::InboxEvents, id, Some("shipping")).await,
        Some(MessageStatus::Failed),
        "the other subscriber's row is not retried"
    );
    let keys = eventually(WAIT, || async {
        Some(listed_keys(&client).await).filter(|k| k.len() == 1)
    })
    .await
    .expect("billing's row leaves the FAILED list");
    assert_eq!(keys, [shipping]);

    client.close().await.expect("close the browser");
    served.stop().await;
    running.shutdown().await;
}

/// The browser on 7 FAILED orders and 2 handled ones: pages of 3 walked with Older and back
/// with Newer list every FAILED row once with the totals; the COMPLETED tab lists only
/// COMPLETED rows; a search by correlation id finds one message, whose view shows its rows,
/// headers, pretty payload and the failed attempt; discarding it with a reason moves it to
/// the archive, where the Archive tab shows who discarded it and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_filters_pages_shows_a_message_and_discards_it_to_the_archive() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, failed) = orders(&store, &[1, 2, 3, 4, 5, 6, 7], &[20, 21]).await;
    running.shutdown().await;
    let served = serve_router(store.clone(), "").await;
    let url = served.url(&format!("/#token={TOKEN}&limit=3"));
    let client = open(&driver, DESKTOP, &url).await;

    // Paging: 3 + 3 + 1 rows, then back.
    let mut pages = Vec::new();
    for range in ["1–3 of 7", "4–6 of 7", "7–7 of 7"] {
        wait_text(&client, "#range", |t| t == range).await;
        pages.push(listed_keys(&client).await);
        if pages.len() < 3 {
            click(&client, "#older").await;
        }
    }
    assert!(
        disabled(&client, "#older").await,
        "the last page has no older one"
    );
    click(&client, "#newer").await;
    wait_text(&client, "#range", |t| t == "4–6 of 7").await;
    assert_eq!(
        listed_keys(&client).await,
        pages[1],
        "Newer shows the same page again"
    );
    click(&client, "#newer").await;
    wait_text(&client, "#range", |t| t == "1–3 of 7").await;
    assert_eq!(listed_keys(&client).await, pages[0]);
    assert!(
        disabled(&client, "#newer").await,
        "the first page has no newer one"
    );
    let seen: Vec<String> = pages.concat();
    let mut expected: Vec<String> = failed
        .iter()
        .map(|e| format!("{}|inbox_events|billing", e.id))
        .collect();
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    expected.sort();
    assert_eq!(unique, expected, "every FAILED row once: {seen:?}");
    assert_eq!(seen.len(), 7, "{seen:?}");
    let created = text_of(&client, "#rows tr td.created")
        .await
        .unwrap_or_default();
    assert!(
        created.len() > 20 && created[..20].ends_with('Z') && created.contains(" · "),
        "UTC ISO with an age: {created}"
    );

    // The COMPLETED tab.
    click(&client, "#status-tabs button[data-status=\"COMPLETED\"]").await;
    let statuses = eventually(WAIT, || async {
        let statuses = run(
            &client,
            "return Array.from(document.querySelectorAll('#rows tr'), (tr) => tr.dataset.status);",
        )
        .await;
        let statuses: Vec<String> = serde_json::from_value(statuses).unwrap_or_default();
        Some(statuses).filter(|s| !s.is_empty() && !s.iter().any(|s| s == "FAILED"))
    })
    .await
    .expect("the COMPLETED tab lists rows");
    assert!(statuses.iter().all(|s| s == "COMPLETED"), "{statuses:?}");

    // A search by correlation id, in the FAILED tab.
    click(&client, "#status-tabs button[data-status=\"FAILED\"]").await;
    let third = &failed[2];
    client
        .find(Locator::Css("#f-correlation_id"))
        .await
        .expect("the correlation id field")
        .send_keys("checkout-3")
        .await
        .expect("type");
    click(&client, "#apply").await;
    wait_text(&client, "#range", |t| t == "1–1 of 1").await;
    let key = format!("{}|inbox_events|billing", third.id);
    assert_eq!(listed_keys(&client).await, std::slice::from_ref(&key));

    // The message view.
    click(
        &client,
        &format!("#rows button.open[data-id=\"{}\"]", third.id),
    )
    .await;
    let payload = eventually(WAIT, || async {
        let text = run(
            &client,
            "return document.getElementById('payload').textContent;",
        )
        .await;
        text.as_str().filter(|t| !t.is_empty()).map(str::to_owned)
    })
    .await
    .expect("the payload shows");
    assert_eq!(payload, "{\n  \"n\": 3\n}", "pretty JSON");
    let headers = text_of(&client, "#message-headers")
        .await
        .unwrap_or_default();
    assert!(
        headers.contains("correlation_id")
            && headers.contains("checkout-3")
            && headers.contains("traceparent"),
        "{headers}"
    );
    let outbox = format!(
        "#message-rows .card[data-key=\"{}|outbox_events|\"]",
        third.id
    );
    let outbox_status = run(
        &client,
        &format!("return document.querySelector({outbox:?}).dataset.status;"),
    )
    .await;
    assert_eq!(outbox_status, "COMPLETED", "the outbox row is shown too");
    let attempt = wait_text(
        &client,
        "#attempts tr[data-outcome=\"FAILED\"] td.error",
        |t| t.contains("payment service refused order 3"),
    )
    .await;
    assert!(!attempt.is_empty());
    let at = text_of(&client, "#attempts tr td.at")
        .await
        .unwrap_or_default();
    assert!(at.contains("Z · "), "{at}");

    // Discard billing's row with a reason, from the message view.
    let card = format!("#message-rows .card[data-key=\"{key}\"]");
    click(&client, &format!("{card} button.discard")).await;
    let form = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#message-form-slot #discard-form"))
        .await
        .expect("the inline discard form opens in the message view");
    assert!(form.is_displayed().await.expect("displayed"));
    assert!(
        disabled(&client, "#discard-confirm").await,
        "no discard without a reason"
    );
    let reason = "order 3 was cancelled by the customer";
    client
        .find(Locator::Css("#discard-reason"))
        .await
        .expect("reason")
        .send_keys(reason)
        .await
        .expect("type the reason");
    client
        .find(Locator::Css("#discard-by"))
        .await
        .expect("name")
        .send_keys("ana")
        .await
        .expect("type the name");
    click(&client, "#discard-confirm").await;
    let notice = wait_text(&client, "#notice", |t| t.starts_with("Discarded")).await;
    assert!(notice.contains("1 row(s)"), "{notice}");
    assert_eq!(
        row_status(&store, BoxKind::InboxEvents, third.id, Some("billing")).await,
        None,
        "the row left the inbox for its archive"
    );
    wait_text(&client, &format!("{card} dd.discard-reason"), |t| {
        t == reason
    })
    .await;
    let by = text_of(&client, &format!("{card} dd.discarded-by"))
        .await
        .unwrap_or_default();
    assert!(by.contains("ana"), "{by}");

    // The Archive tab finds it, with who and why.
    click(&client, "#status-tabs button[data-status=\"archive\"]").await;
    let why = wait_text(
        &client,
        &format!("#rows tr[data-key=\"{key}\"] .discard"),
        |t| t.contains(reason),
    )
    .await;
    assert!(why.contains("ana"), "{why}");
    wait_text(
        &client,
        "#status-tabs button[data-status=\"FAILED\"] .count",
        |t| t == "6",
    )
    .await;

    client.close().await.expect("close the browser");
    served.stop().await;
}

/// Ticked rows survive the page's refresh; Retry selected sends back those rows only, and
/// Discard selected, after a reason, moves the rest to the archive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_survives_the_refresh_and_is_retried_or_discarded_together() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, failed) = orders(&store, &[1, 2, 3], &[]).await;
    let served = serve_router(store.clone(), "").await;
    let url = served.url(&format!("/dashboard#token={TOKEN}"));
    let client = open(&driver, DESKTOP, &url).await;
    wait_text(&client, "#range", |t| t == "1–3 of 3").await;
    let key = |n: usize| format!("{}|inbox_events|billing", failed[n].id);
    for n in [0, 1] {
        click(
            &client,
            &format!("#rows input.select[data-key=\"{}\"]", key(n)),
        )
        .await;
    }
    wait_text(&client, "#selected-count", |t| t == "2 selected").await;
    let updated = text_of(&client, "#updated").await.unwrap_or_default();
    wait_text(&client, "#updated", |t| t != updated).await;
    let ticked = run(
        &client,
        "return Array.from(document.querySelectorAll('#rows input.select:checked'), (t) => t.dataset.key);",
    )
    .await;
    let mut ticked: Vec<String> = serde_json::from_value(ticked).expect("keys");
    ticked.sort();
    let mut want = vec![key(0), key(1)];
    want.sort();
    assert_eq!(ticked, want, "the selection survives a refresh");

    click(&client, "#retry-selected").await;
    for event in &failed[..2] {
        common::browser::wait_for_row(&store, event.id, "billing", MessageStatus::Completed).await;
    }
    let notice = wait_text(&client, "#notice", |t| t.starts_with("Retried")).await;
    assert!(notice.contains("Retried 2 of 2 selected"), "{notice}");
    assert_eq!(
        row_status(&store, BoxKind::InboxEvents, failed[2].id, Some("billing")).await,
        Some(MessageStatus::Failed)
    );
    wait_text(&client, "#range", |t| t == "1–1 of 1").await;
    wait_text(&client, "#selected-count", |t| t == "0 selected").await;

    click(
        &client,
        &format!("#rows input.select[data-key=\"{}\"]", key(2)),
    )
    .await;
    click(&client, "#discard-selected").await;
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#browse-form-slot #discard-form"))
        .await
        .expect("the inline discard form opens above the list");
    client
        .find(Locator::Css("#discard-reason"))
        .await
        .expect("reason")
        .send_keys("duplicate order")
        .await
        .expect("type the reason");
    click(&client, "#discard-confirm").await;
    wait_text(&client, "#notice", |t| t.starts_with("Discarded 1 row(s)")).await;
    wait_text(&client, "#range", |t| t == "0 of 0").await;
    assert_eq!(
        row_status(&store, BoxKind::InboxEvents, failed[2].id, Some("billing")).await,
        None
    );

    client.close().await.expect("close the browser");
    served.stop().await;
    running.shutdown().await;
}

/// Whether the page is wider than the window (a horizontal page scroll).
async fn overflows(client: &Client) -> (i64, i64) {
    let sizes = run(
        client,
        "return [document.documentElement.scrollWidth, window.innerWidth];",
    )
    .await;
    (
        sizes[0].as_i64().unwrap_or(i64::MAX),
        sizes[1].as_i64().unwrap_or(0),
    )
}

/// Whether the element matching `css` is shown whole inside the window's width.
async fn within_width(client: &Client, css: &str) -> bool {
    let script = format!(
        "const e = document.querySelector({css:?}); if (!e) return false; \
         const r = e.getBoundingClientRect(); \
         return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= window.innerWidth;"
    );
    run(client, &script).await == serde_json::Value::Bool(true)
}

/// At 420 px wide the list, the message view and the discard form fit the window (no
/// horizontal page scroll) and their buttons are on screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_420_px_wide_the_browser_and_the_message_view_fit_with_their_buttons() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, failed) = orders(&store, &[1, 2], &[3]).await;
    running.shutdown().await;
    let served = serve_router(store.clone(), "").await;
    let client = open(&driver, (420, 900), &served.dashboard()).await;
    wait_text(&client, "#range", |t| t == "1–2 of 2").await;
    let (scroll, inner) = overflows(&client).await;
    assert!(inner <= 420, "the window is narrow: {inner}");
    assert!(scroll <= inner, "the list overflows: {scroll} > {inner}");
    for css in [
        "#rows button.retry",
        "#rows button.discard",
        "#rows button.open",
        "#rows input.select",
        "#older",
        "#newer",
        "#retry-selected",
        "#discard-selected",
        "#apply",
        "#save-token",
    ] {
        assert!(within_width(&client, css).await, "{css} is not on screen");
    }

    click(
        &client,
        &format!("#rows button.open[data-id=\"{}\"]", failed[0].id),
    )
    .await;
    wait_text(&client, "#attempts tr td.error", |t| {
        t.contains("refused order 1")
    })
    .await;
    let (scroll, inner) = overflows(&client).await;
    assert!(
        scroll <= inner,
        "the message view overflows: {scroll} > {inner}"
    );
    let card = format!(
        "#message-rows .card[data-key=\"{}|inbox_events|billing\"]",
        failed[0].id
    );
    for css in [
        format!("{card} button.retry"),
        format!("{card} button.discard"),
        "#message-close".to_owned(),
        "#payload".to_owned(),
    ] {
        assert!(within_width(&client, &css).await, "{css} is not on screen");
    }
    click(&client, &format!("{card} button.discard")).await;
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#message-form-slot #discard-form"))
        .await
        .expect("the discard form");
    let (scroll, inner) = overflows(&client).await;
    assert!(
        scroll <= inner,
        "the discard form overflows: {scroll} > {inner}"
    );
    for css in ["#discard-reason", "#discard-confirm", "#discard-cancel"] {
        assert!(within_width(&client, css).await, "{css} is not on screen");
    }

    client.close().await.expect("close the browser");
    served.stop().await;
}

/// With messages handled and one failed in the last hour, the charts draw bars of handled
/// and failed per minute and the lag lines, and the workers panel shows the live process
/// on the boxes it works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_hour_is_charted_in_svg_and_the_live_workers_are_listed() {
    let Some(driver) = chromedriver().await else {
        return;
    };
    let (store, _file) = sqlite_store().await;
    let (running, _failed) = orders(&store, &[1], &[2, 3, 4]).await;
    let served = serve_router(store.clone(), "").await;
    let client = open(&driver, DESKTOP, &served.dashboard()).await;
    let count = |css: &'static str| {
        let client = &client;
        async move {
            let script = format!("return document.querySelectorAll({css:?}).length;");
            run(client, &script).await.as_u64().unwrap_or(0)
        }
    };
    eventually(WAIT, || async {
        (count("#chart-throughput rect.bar.handled").await > 0).then_some(())
    })
    .await
    .expect("bars of handled messages");
    let handled = run(
        &client,
        "return Array.from(document.querySelectorAll('#chart-throughput rect.bar.handled'), \
         (r) => Number(r.dataset.n)).reduce((a, b) => a + b, 0);",
    )
    .await;
    assert!(
        handled.as_u64().unwrap_or(0) >= 3,
        "3 orders handled at least: {handled}"
    );
    assert!(
        count("#chart-throughput rect.bar.failed").await > 0,
        "a bar of failed attempts"
    );
    let lag = run(
        &client,
        "const p = document.querySelector('#chart-lag path.line.lag-max'); return p ? p.getAttribute('d') : '';",
    )
    .await;
    assert!(
        lag.as_str().is_some_and(|d| d.starts_with('M')),
        "a lag line: {lag}"
    );
    let summary = text_of(&client, "#timeline-summary")
        .await
        .unwrap_or_default();
    assert!(summary.contains("handled"), "{summary}");
    let live = wait_text(
        &client,
        "#workers tr[data-box=\"inbox_events\"] td.live-processes",
        |t| t.contains("(pid "),
    )
    .await;
    assert!(
        live.contains(&format!("(pid {})", std::process::id())),
        "{live}"
    );

    client.close().await.expect("close the browser");
    served.stop().await;
    running.shutdown().await;
}

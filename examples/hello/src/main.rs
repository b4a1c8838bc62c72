//! Hello, bandeja: emit one event in a transaction, handle it, exit.
use bandeja::prelude::*;
use bandeja::sqlite::{Context, SqliteStore};

#[derive(serde::Serialize, serde::Deserialize)]
struct Greeted {
    to: String,
}
impl Payload for Greeted {
    const TYPE: &'static str = "hello.Greeted";
}

static HANDLED: tokio::sync::Notify = tokio::sync::Notify::const_new();

struct Greeter;
impl EventHandler<SqliteStore, Greeted> for Greeter {
    async fn handle(&self, _: &mut Context<'_>, event: Event<Greeted>) -> Result<(), HandlerError> {
        println!("hello, {}!", event.payload.to);
        HANDLED.notify_one();
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = SqliteStore::connect("sqlite::memory:").await?;
    store.migrate().await?;
    // No initial delay, short polling (the spec's defaults wait 2 s and 10 s first).
    let bandeja = Bandeja::builder(store.clone())
        .config(Config::development())
        .on_event("greeter", Greeter)
        .build()?;
    let running = bandeja.start().await?;

    let mut tx = store.pool().begin().await?;
    // ... your business writes through &mut *tx ...
    let event = Event::new("Greeting", "1", Greeted { to: "world".into() });
    bandeja.outbox().emit(&mut tx, &event).await?;
    tx.commit().await?; // the event leaves only now, and surely

    running.run_until(HANDLED.notified()).await; // then a graceful shutdown
    Ok(())
}

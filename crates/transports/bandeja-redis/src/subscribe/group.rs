//! The commands one consumer runs on one stream of its group: create the group, read new
//! entries, read back its own pending ones, take over idle ones, list the pending list's
//! head, acknowledge, refresh, and hand back at a stop.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::Value;

use crate::connection::Settings;
use crate::entry::{EntryId, Read};
use crate::error::RedisError;
use crate::reply::{self, Claimed, Consumer, Pending};

/// How many entries one `XREADGROUP … 0` or `XPENDING` of a consumer's own entries reads.
const PAGE: usize = 1000;

/// A consumer's entries are made this idle when it hands them back: any process of the
/// service (whatever its `claim_idle`) takes them over at once.
const HANDED_BACK_IDLE: Duration = crate::options::MAX_CLAIM_IDLE;

/// One stream, the service's group on it, and this subscription's consumer in the group.
#[derive(Debug, Clone)]
pub(crate) struct GroupStream {
    pub(crate) key: String,
    pub(crate) group: String,
    pub(crate) consumer: String,
}

/// Milliseconds of `duration`, for command arguments.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl GroupStream {
    /// `XGROUP CREATE <key> <group> 0 MKSTREAM`; an existing group (`BUSYGROUP`) is fine.
    /// From `0`: a group created after entries were added (a first start, or after the
    /// server lost the group) delivers every entry the stream keeps.
    pub(crate) async fn create(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
    ) -> Result<(), RedisError> {
        let mut create = redis::cmd("XGROUP");
        create
            .arg("CREATE")
            .arg(&self.key)
            .arg(&self.group)
            .arg("0")
            .arg("MKSTREAM");
        match settings
            .run(connection, "XGROUP CREATE", &self.key, &create)
            .await
        {
            Ok(_) => Ok(()),
            Err(RedisError::Command { source, .. }) if source.code() == Some("BUSYGROUP") => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// `XREADGROUP … COUNT <count> BLOCK <block> STREAMS <key> >`: new entries, waiting at
    /// most `block` for the first (and the connect timeout more for the answer).
    pub(crate) async fn read_new(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
        count: usize,
        block: Duration,
    ) -> Result<Vec<Read>, RedisError> {
        let mut read = self.read_group(count);
        read.arg("BLOCK")
            .arg(millis(block))
            .arg("STREAMS")
            .arg(&self.key)
            .arg(">");
        let operation = "XREADGROUP";
        let after = block + settings.options.connect_timeout;
        let value = match tokio::time::timeout(after, read.query_async::<Value>(connection)).await {
            Ok(Ok(value)) => value,
            Ok(Err(source)) => return Err(RedisError::command(operation, &self.key, source)),
            Err(_) => {
                return Err(RedisError::Timeout {
                    operation: format!("{operation} {}", self.key),
                    after,
                })
            }
        };
        reply::read_group(&self.key, value).map_err(|e| RedisError::reply(operation, e))
    }

    /// Every entry pending with this consumer (`XREADGROUP … STREAMS <key> 0`, page by
    /// page), with its fields: what it was delivered and has not acknowledged.
    pub(crate) async fn read_own(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
    ) -> Result<Vec<Read>, RedisError> {
        let mut all = Vec::new();
        let mut after = EntryId::ZERO;
        loop {
            let mut read = self.read_group(PAGE);
            read.arg("STREAMS").arg(&self.key).arg(after.to_string());
            let value = settings
                .run(connection, "XREADGROUP (own)", &self.key, &read)
                .await?;
            let page = reply::read_group(&self.key, value)
                .map_err(|e| RedisError::reply("XREADGROUP (own)", e))?;
            let full = page.len() >= PAGE;
            match page.last() {
                Some(last) => after = last.id(),
                None => return Ok(all),
            }
            all.extend(page);
            if !full {
                return Ok(all);
            }
        }
    }

    fn read_group(&self, count: usize) -> redis::Cmd {
        let mut read = redis::cmd("XREADGROUP");
        read.arg("GROUP")
            .arg(&self.group)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(count.max(1));
        read
    }

    /// `XAUTOCLAIM <key> <group> <consumer> <min_idle> <cursor> COUNT <count>`: takes
    /// over entries pending for at least `min_idle` with any consumer.
    pub(crate) async fn autoclaim(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
        min_idle: Duration,
        cursor: EntryId,
        count: usize,
    ) -> Result<Claimed, RedisError> {
        let mut claim = redis::cmd("XAUTOCLAIM");
        claim
            .arg(&self.key)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(millis(min_idle))
            .arg(cursor.to_string())
            .arg("COUNT")
            .arg(count.max(1));
        let value = settings
            .run(connection, "XAUTOCLAIM", &self.key, &claim)
            .await?;
        reply::autoclaim(&self.key, value).map_err(|e| RedisError::reply("XAUTOCLAIM", e))
    }

    /// The first `count` entries of the group's pending list, oldest first, each with its
    /// consumer (`XPENDING <key> <group> - + <count>`).
    pub(crate) async fn pending_head(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
        count: usize,
    ) -> Result<Vec<Pending>, RedisError> {
        let mut pending = redis::cmd("XPENDING");
        pending
            .arg(&self.key)
            .arg(&self.group)
            .arg("-")
            .arg("+")
            .arg(count.max(1));
        let value = settings
            .run(connection, "XPENDING", &self.key, &pending)
            .await?;
        reply::pending(value).map_err(|e| RedisError::reply("XPENDING", e))
    }

    /// `XACK`: the entries are done for this group.
    pub(crate) async fn ack(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
        ids: &[EntryId],
    ) -> Result<(), RedisError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut ack = redis::cmd("XACK");
        ack.arg(&self.key).arg(&self.group);
        for id in ids {
            ack.arg(id.to_string());
        }
        settings.run(connection, "XACK", &self.key, &ack).await?;
        Ok(())
    }

    /// `XCLAIM … <ids> IDLE <idle> JUSTID` to this consumer: resets how long the entries
    /// have been idle to `idle` without counting a delivery (0 keeps them this
    /// consumer's while it stores them; a large value hands them back).
    pub(crate) async fn set_idle(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
        ids: &[EntryId],
        idle: Duration,
    ) -> Result<(), RedisError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut claim = redis::cmd("XCLAIM");
        claim
            .arg(&self.key)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(0);
        for id in ids {
            claim.arg(id.to_string());
        }
        claim.arg("IDLE").arg(millis(idle)).arg("JUSTID");
        settings
            .run(connection, "XCLAIM", &self.key, &claim)
            .await?;
        Ok(())
    }

    /// Makes every entry pending with this consumer claimable at once by the service's
    /// other processes, then deletes the consumer if nothing is left with it. Returns how
    /// many entries were handed back.
    pub(crate) async fn hand_back(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
    ) -> Result<usize, RedisError> {
        let mut pending = redis::cmd("XPENDING");
        pending
            .arg(&self.key)
            .arg(&self.group)
            .arg("-")
            .arg("+")
            .arg(PAGE)
            .arg(&self.consumer);
        let value = settings
            .run(connection, "XPENDING", &self.key, &pending)
            .await?;
        let ids: Vec<EntryId> = reply::pending(value)
            .map_err(|e| RedisError::reply("XPENDING", e))?
            .into_iter()
            .map(|p| p.id)
            .collect();
        self.set_idle(settings, connection, &ids, HANDED_BACK_IDLE)
            .await?;
        if ids.is_empty() {
            self.delete_consumer(settings, connection, &self.consumer)
                .await?;
        }
        Ok(ids.len())
    }

    /// The group's consumers.
    pub(crate) async fn consumers(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
    ) -> Result<Vec<Consumer>, RedisError> {
        let mut info = redis::cmd("XINFO");
        info.arg("CONSUMERS").arg(&self.key).arg(&self.group);
        let value = settings
            .run(connection, "XINFO CONSUMERS", &self.key, &info)
            .await?;
        reply::consumers(value).map_err(|e| RedisError::reply("XINFO CONSUMERS", e))
    }

    /// `XGROUP DELCONSUMER`: only for a consumer with nothing pending (its pending entries
    /// would go with it).
    pub(crate) async fn delete_consumer(
        &self,
        settings: &Settings,
        connection: &mut MultiplexedConnection,
        consumer: &str,
    ) -> Result<(), RedisError> {
        let mut delete = redis::cmd("XGROUP");
        delete
            .arg("DELCONSUMER")
            .arg(&self.key)
            .arg(&self.group)
            .arg(consumer);
        settings
            .run(connection, "XGROUP DELCONSUMER", &self.key, &delete)
            .await?;
        Ok(())
    }
}

//! What `connect` checks before a process publishes or consumes anything: that the server
//! has the commands this transport uses, and that every process of the prefix uses the
//! same partition count.

use redis::aio::MultiplexedConnection;
use redis::Value;

use crate::connection::Settings;
use crate::error::RedisError;
use crate::reply;

/// The oldest server version with `XAUTOCLAIM`.
const OLDEST_SUPPORTED: (u32, u32) = (6, 2);

impl Settings {
    /// Refuses a server older than 6.2 ([`RedisError::ServerTooOld`]).
    pub(crate) async fn check_server(
        &self,
        connection: &mut MultiplexedConnection,
    ) -> Result<(), RedisError> {
        let mut info = redis::cmd("INFO");
        info.arg("server");
        let text = reply::text(&self.run(connection, "INFO", "server", &info).await?);
        let version = server_version(&text).unwrap_or_default();
        match parse_version(&version) {
            Some(found) if found >= OLDEST_SUPPORTED => Ok(()),
            // A server that does not say (a proxy, a compatible server): tried as it is.
            None => {
                tracing::debug!(%version, "the Redis server's version is unknown");
                Ok(())
            }
            Some(_) => Err(RedisError::ServerTooOld {
                url: self.url.clone(),
                version,
            }),
        }
    }

    /// Checks that every process of this prefix uses this process's partition count: the
    /// first one records it in the key `<prefix>.partitions` (`SET … NX`, atomic across
    /// processes); a process with another count is refused here, at start.
    pub(crate) async fn check_partitions(
        &self,
        connection: &mut MultiplexedConnection,
    ) -> Result<(), RedisError> {
        let marker = self.names.partitions_marker();
        let configured = self.options.partitions;
        let mut set = redis::cmd("SET");
        set.arg(&marker).arg(configured).arg("NX");
        self.run(connection, "SET", &marker, &set).await?;
        let mut get = redis::cmd("GET");
        get.arg(&marker);
        let declared = match self.run(connection, "GET", &marker, &get).await? {
            Value::Nil => return Ok(()), // deleted meanwhile: recorded again next time
            value => reply::text(&value),
        };
        if declared.trim() == configured.to_string() {
            Ok(())
        } else {
            Err(RedisError::PartitionMismatch {
                prefix: self.options.prefix.clone(),
                configured,
                declared: declared.chars().take(32).collect(),
                marker,
            })
        }
    }
}

/// The `redis_version` line of `INFO server`.
fn server_version(info: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .map(|version| version.trim().to_owned())
}

/// `major.minor` of a version string.
fn parse_version(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_info() {
        let info = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n";
        assert_eq!(server_version(info).as_deref(), Some("7.0.15"));
        assert_eq!(parse_version("7.0.15"), Some((7, 0)));
        assert_eq!(parse_version("6.2"), Some((6, 2)));
        assert!(parse_version("6.0.9") < Some(OLDEST_SUPPORTED));
        assert_eq!(parse_version("x"), None);
        assert_eq!(server_version("# Server\r\n"), None);
    }
}

//! The topics: created idempotently with the configured partition count (when
//! `create_topics` is on), and checked to have that count, before anything is published to
//! or consumed from them. A topic checked once is not checked again by this process.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;

use crate::error::KafkaError;
use crate::settings::Settings;

/// The topics a transport has checked, and the client that checks them.
pub(crate) struct Topics {
    settings: Arc<Settings>,
    admin: Arc<AdminClient<DefaultClientContext>>,
    checked: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Topics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topics").finish_non_exhaustive()
    }
}

impl Topics {
    pub(crate) fn new(settings: Arc<Settings>) -> Result<Topics, KafkaError> {
        let admin = settings
            .admin()
            .create::<AdminClient<DefaultClientContext>>()
            .map_err(|source| KafkaError::Client {
                client: "admin client",
                source,
            })?;
        Ok(Topics {
            settings,
            admin: Arc::new(admin),
            checked: Mutex::new(HashSet::new()),
        })
    }

    /// Whether the brokers answer (a metadata request for every topic).
    pub(crate) async fn reach(&self) -> Result<(), KafkaError> {
        self.partitions_of(None).await.map(|_| ())
    }

    /// Makes sure `topic` exists with the configured partition count.
    pub(crate) async fn ensure(&self, topic: &str) -> Result<(), KafkaError> {
        if self.is_checked(topic) {
            return Ok(());
        }
        let options = &self.settings.options;
        if options.create_topics {
            self.create(topic).await?;
        }
        // Just after a creation (this process's or another's) the brokers may not know
        // the topic yet: asked again until `request_timeout`.
        let deadline = tokio::time::Instant::now() + options.request_timeout;
        let mut found = self.partitions_of(Some(topic)).await?;
        while found.is_none()
            && (options.create_topics || options.broker_creates_topics)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            found = self.partitions_of(Some(topic)).await?;
        }
        match found {
            None => {
                return Err(KafkaError::MissingTopic {
                    topic: topic.to_owned(),
                    partitions: options.partitions,
                })
            }
            Some(found) if found != usize::from(options.partitions) => {
                return Err(KafkaError::PartitionMismatch {
                    topic: topic.to_owned(),
                    found,
                    configured: options.partitions,
                })
            }
            Some(_) => {}
        }
        if let Ok(mut checked) = self.checked.lock() {
            checked.insert(topic.to_owned());
        }
        Ok(())
    }

    fn is_checked(&self, topic: &str) -> bool {
        self.checked
            .lock()
            .map(|checked| checked.contains(topic))
            .unwrap_or(false)
    }

    /// Creates `topic`; one that exists already is fine (its count is checked after).
    async fn create(&self, topic: &str) -> Result<(), KafkaError> {
        let options = &self.settings.options;
        let new = NewTopic::new(
            topic,
            i32::from(options.partitions),
            TopicReplication::Fixed(options.replication_factor),
        );
        let admin_options = AdminOptions::new()
            .request_timeout(Some(options.request_timeout))
            .operation_timeout(Some(options.request_timeout));
        let results = self
            .admin
            .create_topics([&new], &admin_options)
            .await
            .map_err(|source| KafkaError::Unreachable {
                servers: options.bootstrap_servers.clone(),
                source,
            })?;
        for result in results {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => {
                    return Err(KafkaError::CreateTopic {
                        topic: name,
                        reason: code.to_string(),
                        permanent: matches!(
                            code,
                            RDKafkaErrorCode::InvalidReplicationFactor
                                | RDKafkaErrorCode::InvalidPartitions
                                | RDKafkaErrorCode::PolicyViolation
                                | RDKafkaErrorCode::InvalidTopic
                                | RDKafkaErrorCode::TopicAuthorizationFailed
                                | RDKafkaErrorCode::ClusterAuthorizationFailed
                                | RDKafkaErrorCode::InvalidConfig
                        ),
                    })
                }
            }
        }
        Ok(())
    }

    /// The partition count of `topic` (`None`: it does not exist), or, without a topic,
    /// whether the brokers answer at all. librdkafka's metadata call blocks: it runs on
    /// the blocking pool.
    async fn partitions_of(&self, topic: Option<&str>) -> Result<Option<usize>, KafkaError> {
        let admin = self.admin.clone();
        let timeout = self.settings.options.request_timeout;
        let name = topic.map(str::to_owned);
        let servers = self.settings.options.bootstrap_servers.clone();
        let answer = tokio::task::spawn_blocking(move || {
            admin.inner().fetch_metadata(name.as_deref(), timeout)
        })
        .await;
        let metadata = match answer {
            Ok(Ok(metadata)) => metadata,
            Ok(Err(source)) => return Err(KafkaError::Unreachable { servers, source }),
            Err(error) => return Err(KafkaError::Metadata(error.to_string())),
        };
        let Some(topic) = topic else {
            return Ok(Some(metadata.topics().len()));
        };
        Ok(metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .filter(|t| t.error().is_none() && !t.partitions().is_empty())
            .map(|t| t.partitions().len()))
    }
}

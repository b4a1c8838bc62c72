//! The macros the adapter crates' tests call: one per suite, each generating one
//! `#[tokio::test]` per check of its suite, named after the check. The lists of checks are
//! not written here: `build.rs` generates them from the suites' sources
//! ([`checks`](crate::checks)), and each macro below hands its arguments to its suite's
//! generated list, which hands both to [`__conformance_tests!`].

/// Generates one `#[tokio::test]` per check of the [`store`](crate::store) suite. `$make`
/// is an async fn returning `(store, guard)`: a fresh, migrated store and whatever must
/// live until the test ends (e.g. a schema dropper or a [`TempDir`](crate::fixtures::TempDir)).
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:path) => {
        $crate::__store_checks! { store { $make } }
    };
}

/// Generates one `#[tokio::test]` per check of the [`runtime`](crate::runtime) suite;
/// `$make` as for [`store_conformance_tests!`].
#[macro_export]
macro_rules! runtime_conformance_tests {
    ($make:path) => {
        $crate::__runtime_checks! { store { $make } }
    };
}

/// Generates one `#[tokio::test]` per check of the [`completion`](crate::completion) suite;
/// `$make` as for [`store_conformance_tests!`].
#[macro_export]
macro_rules! completion_conformance_tests {
    ($make:path) => {
        $crate::__completion_checks! { store { $make } }
    };
}

/// Generates one `#[tokio::test]` per check of the [`staleness`](crate::staleness) suite;
/// `$make` as for [`store_conformance_tests!`].
#[macro_export]
macro_rules! staleness_conformance_tests {
    ($make:path) => {
        $crate::__staleness_checks! { store { $make } }
    };
}

/// Generates one `#[tokio::test]` per check of the [`admin`](crate::admin) suite. `$make`
/// as for [`store_conformance_tests!`]; `$archived` is an
/// `async fn(S, BoxKind) -> Vec<ArchivedRow>` reading the box's archive table (each store's
/// test crate writes it in its own SQL: the `Admin` trait has no archive reader), passed to
/// the checks that take a second argument.
///
/// [`ArchivedRow`]: crate::admin::ArchivedRow
#[macro_export]
macro_rules! admin_conformance_tests {
    ($make:path, $archived:path) => {
        $crate::__admin_checks! { store_and_archive { $make, $archived } }
    };
}

/// Generates one `#[tokio::test]` per check of the [`transport`](crate::transport) suite.
/// `$store` is an async fn returning `(store, guard)` (a fresh migrated store per call:
/// each service of a test gets its own); `$transport` an async fn taking a namespace
/// (`String`) and returning an `Arc<dyn Transport>` whose streams, exchanges and queues are
/// that namespace's, so tests run in parallel. It is called once per service; the services
/// of one test share the namespace.
#[macro_export]
macro_rules! transport_conformance_tests {
    ($store:path, $transport:path) => {
        $crate::__transport_checks! { transport { $store, $transport } }
    };
}

/// Turns a generated list into tests. The first bracket holds the checks that take the
/// store (or the harness) only, the second those that also take the suite's second
/// argument, which only the admin suite has.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    (store { $make:path } [$($name:ident => $check:path,)*] []) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (store, _guard) = $make().await;
                $check(store).await;
            }
        )*
    };
    (store_and_archive { $make:path, $archived:path }
        [$($name:ident => $check:path,)*] [$($with:ident => $check_with:path,)*]) => {
        $crate::__conformance_tests! { store { $make } [$($name => $check,)*] [] }
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $with() {
                let (store, _guard) = $make().await;
                $check_with(store, $archived).await;
            }
        )*
    };
    (transport { $store:path, $transport:path } [$($name:ident => $check:path,)*] []) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let harness = $crate::transport::Harness::new(
                    || -> $crate::transport::StoreFuture<_> {
                        Box::pin(async {
                            let (store, guard) = $store().await;
                            (store, Box::new(guard) as Box<dyn std::any::Any + Send>)
                        })
                    },
                    |namespace: String| -> $crate::transport::TransportFuture {
                        Box::pin($transport(namespace))
                    },
                );
                $check(harness).await;
            }
        )*
    };
    ($kind:ident { $($args:tt)* } [$($plain:tt)*] [$($with:tt)+]) => {
        compile_error!(concat!(
            "these checks take a second argument, which only the admin suite's macro passes: ",
            stringify!($($with)+),
        ));
    };
}

/// Generates the `#[tokio::test]` of [`foreign::python_clients_publish_and_consume`](crate::foreign::python_clients_publish_and_consume)
/// on one broker: `$store` and `$transport` as for [`transport_conformance_tests!`];
/// `$broker` the Python client's name for the broker (`"nats"`, `"amqp"`, `"redis"`,
/// `"kafka"`), `$url` an expression giving its address, `$prefix` a function from the
/// harness's namespace to the prefix the transports of `$transport` name things with.
#[macro_export]
macro_rules! foreign_clients_test {
    ($store:path, $transport:path, $broker:literal, $url:expr, $prefix:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_python_client_publishes_events_handled_once_and_reads_what_bandeja_publishes() {
            let harness = $crate::transport::Harness::new(
                || -> $crate::transport::StoreFuture<_> {
                    Box::pin(async {
                        let (store, guard) = $store().await;
                        (store, Box::new(guard) as Box<dyn std::any::Any + Send>)
                    })
                },
                |namespace: String| -> $crate::transport::TransportFuture {
                    Box::pin($transport(namespace))
                },
            );
            let prefix: String = ($prefix)(harness.namespace());
            $crate::foreign::python_clients_publish_and_consume(harness, $broker, &$url, &prefix)
                .await;
        }
    };
}

//! The macros the adapter crates' tests call: one per suite, each generating one
//! `#[tokio::test]` per check of its suite, named after the check.

/// Generates one `#[tokio::test]` per conformance check. `$make` is an async fn returning
/// `(store, guard)`: a fresh, migrated store and whatever must live until the test ends
/// (e.g. a schema dropper).
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests $make;
            emission_commits_with_the_transaction_and_rolls_back_with_it,
            duplicate_outbox_id_is_a_duplicate_error_and_writes_nothing,
            claims_in_seq_order_with_a_lease,
            completion_is_guarded_by_the_lease_holder,
            retry_goes_back_to_pending_with_backoff,
            failure_is_terminal_with_the_error,
            inbox_dedup_counts_deliveries,
            expired_lease_is_reclaimed_by_another_worker,
            renewal_extends_the_lease_of_the_rows_still_held_only,
            per_key_order_holds_back_later_messages_of_the_key_only,
            complete_inside_the_handler_transaction,
            transfer_moves_outbox_rows_into_the_inbox_per_subscriber,
            release_returns_rows_without_spending_retries,
            concurrent_claims_never_overlap,
        );
    };
    (@tests $make:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (store, _guard) = $make().await;
                $crate::store::$name(store).await;
            }
        )*
    };
    (@tests_in $module:ident $make:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (store, _guard) = $make().await;
                $crate::$module::$name(store).await;
            }
        )*
    };
}

/// Generates one `#[tokio::test]` per runtime check; `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests).
#[macro_export]
macro_rules! runtime_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests_in runtime $make;
            events_reach_every_subscriber_once,
            rolled_back_emission_is_never_delivered,
            failing_handler_retries_with_backoff_then_fails_with_its_error,
            permanent_error_fails_at_once,
            panicking_handler_counts_as_a_failure_and_the_worker_survives,
            always_failing_handler_fails_alone_after_max_retries,
            intermittently_failing_handler_completes_on_a_retry,
            hung_handler_times_out_and_releases_its_lease_while_others_proceed,
            a_retried_hung_message_does_not_hold_up_messages_claimed_with_it,
            a_hung_first_attempt_delays_other_keys_by_at_most_one_backoff,
            cycles_beside_a_straggler_share_the_handler_concurrency,
            handlers_slower_than_the_lease_run_once_each_under_renewed_leases,
            a_fast_subscriber_turned_slow_is_never_stopped_and_holds_up_nobody,
            a_chunk_handing_over_never_waits_for_its_own_permit,
            per_handler_timeout_overrides_the_group_timeout,
            per_handler_timeout_mistakes_are_startup_errors,
            handler_emission_commits_with_the_handling_only,
            redelivered_message_never_reaches_the_handler_again,
            command_without_handler_fails_with_a_clear_error,
            commands_reach_their_handler_in_the_target_tenant,
            disabled_worker_does_not_run,
            duplicate_subscriber_is_a_startup_error,
            emission_wakes_the_workers_without_waiting_for_polling,
            graceful_shutdown_finishes_the_batch_in_hand,
            graceful_shutdown_releases_a_batch_that_cannot_finish,
            messages_of_one_key_are_handled_in_emission_order,
            scenario_waits_for_the_state_change,
            broker_path_acknowledges_after_storing_and_absorbs_redeliveries,
            batch_handler_gets_batches_and_a_poison_event_fails_alone,
            a_tenant_backlog_does_not_starve_another_tenant,
            a_process_without_a_subscriber_never_fails_its_rows,
            rows_of_a_subscriber_no_process_runs_wait_for_one,
            commands_wait_for_their_registered_handler,
            reception_stores_rows_for_subscriptions_of_other_processes,
            a_process_claims_only_the_types_it_runs_a_subscriber_for,
            a_subscriber_with_an_every_tenant_and_a_tenant_subscription_gets_one_row,
        );
    };
}

/// Generates one `#[tokio::test]` per `Admin` check. `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests); `$archived` is an
/// `async fn(S, BoxKind) -> Vec<ArchivedRow>` reading the box's archive table (each store's
/// test crate writes it in its own SQL: the `Admin` trait has no archive reader).
#[macro_export]
macro_rules! admin_conformance_tests {
    ($make:path, $archived:path) => {
        $crate::store_conformance_tests!(@tests_in admin $make;
            ping_answers,
            counters_count_each_status_per_box,
            counters_by_tenant_split_each_box,
            stuck_counts_pending_rows_older_than_the_threshold,
            stuck_counts_from_the_last_change_so_a_retried_old_row_is_not_stuck,
            counters_count_live_and_failed_rows_taken_over,
            list_filters_by_every_field,
            list_pages_newest_first_without_overlap,
            count_matches_what_list_returns_for_every_filter,
            show_returns_the_outbox_row_and_every_inbox_row,
            retry_resubmits_failed_rows_only_and_wakes_the_box,
            retry_and_replay_reject_filters_they_cannot_serve,
            replay_resubmits_completed_inbox_rows_only,
            outbox_replay_resends_completed_rows_and_the_inbox_absorbs_them,
            outbox_replay_backfills_a_new_subscriber,
            outbox_replay_moves_archived_rows_back_into_the_box,
            outbox_replay_refuses_what_it_cannot_serve,
            outbox_replay_chooses_by_time_window_id_and_tenant,
            outbox_replay_runs_in_batches_and_takes_each_row_once,
            purge_deletes_old_completed_rows_only,
            purge_and_archive_count_a_row_completed_just_before_the_horizon,
            sql_metacharacters_in_filters_match_nothing_and_break_nothing,
            retry_routes_a_rejected_message_once_a_subscription_exists,
        );

        $crate::store_conformance_tests!(@tests_in admin $make;
            subscriptions_list_live_processes_and_inbox_rows,
            a_process_not_refreshed_within_live_for_is_not_live,
            retire_is_refused_while_a_live_process_runs_it,
            retire_discard_removes_the_subscription_and_its_rows,
            retire_keep_fails_the_rows_with_the_reason,
            health_turns_down_naming_an_unattended_subscription,
        );

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn archive_moves_old_completed_rows_out_of_the_box() {
            let (store, _guard) = $make().await;
            $crate::admin::archive_moves_old_completed_rows_out_of_the_box(
                store, $archived,
            )
            .await;
        }
    };
}

/// Generates one `#[tokio::test]` per completion check; `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests).
#[macro_export]
macro_rules! completion_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests_in completion $make;
            update_mode_keeps_completed_rows_in_every_box,
            delete_mode_removes_completed_rows_from_every_box,
            archive_mode_moves_completed_rows_into_the_archives,
            redelivery_after_delete_is_absorbed_until_the_window_passes,
            redelivery_after_archive_is_absorbed_until_the_window_passes,
            retention_purges_old_completed_rows_only,
            retention_task_purges_completed_rows_in_the_runtime,
            staleness_marks_pending_and_processing_rows_failed_with_the_reason,
            staleness_monitor_runs_in_the_runtime,
        );
    };
}

/// Generates one `#[tokio::test]` per staleness check; `$make` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests).
#[macro_export]
macro_rules! staleness_conformance_tests {
    ($make:path) => {
        $crate::store_conformance_tests!(@tests_in staleness $make;
            a_draining_backlog_is_not_failed_until_the_box_stops,
            a_row_behind_an_older_live_row_of_its_key_is_not_failed,
            processing_is_stale_only_when_its_lease_ran_out_long_ago,
            an_inbox_subscriber_that_stops_is_failed_while_another_drains,
            archived_rows_are_progress_in_archive_mode,
            a_stuck_box_is_failed_in_delete_mode,
            the_monitor_spares_a_slow_drain_in_the_runtime,
        );
    };
}

/// Generates one `#[tokio::test]` per transport check. `$store` is an async fn returning
/// `(store, guard)` (a fresh migrated store per call: each service of a test gets its own);
/// `$transport` an async fn taking a namespace (`String`) and returning an
/// `Arc<dyn Transport>` whose streams, exchanges and queues are that namespace's, so tests
/// run in parallel. It is called once per service; the services of one test share the
/// namespace.
#[macro_export]
macro_rules! transport_conformance_tests {
    ($store:path, $transport:path) => {
        $crate::transport_conformance_tests!(@tests $store, $transport;
            publishes_and_delivers_once_to_each_subscribing_service,
            a_delivery_stored_but_not_acknowledged_is_absorbed,
            unacknowledged_messages_are_redelivered_after_a_consumer_crash,
            messages_of_one_key_arrive_and_are_handled_in_order,
            headers_arrive_intact,
            commands_reach_the_service_their_topic_names,
            bad_bodies_are_stored_failed_and_do_not_block,
            a_transport_reporting_fewer_results_never_completes_the_unreported,
            a_claim_failing_part_way_releases_what_it_claimed,
            a_batch_whose_lease_is_too_short_is_released_not_published,
            a_publish_past_its_deadline_is_unavailable,
            a_type_only_a_newer_process_subscribes_to_is_stored_for_it,
        );
    };
    (@tests $store:path, $transport:path; $($name:ident),* $(,)?) => {
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
                $crate::transport::$name(harness).await;
            }
        )*
    };
}

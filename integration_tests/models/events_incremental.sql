-- The same model as events_dbt_spark, dbt's own `incremental` with its insert_overwrite,
-- without `sized=false`: on a sized_spark profile the sized engine writes it. The demo
-- shows the two side by side: what changing the profile's `type: spark` to
-- `type: sized_spark` does to a dbt-spark project's table.
{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
          partition_by=['event_date'], file_format='parquet', target_file_size='32KB') }}
select * from {{ ref('stg_events') }}
{% if is_incremental() %}
where event_date >= date_sub(date'2025-01-01', -({{ var('event_days') }} - 7))
{% endif %}

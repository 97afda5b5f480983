-- The baseline: dbt-spark's own `incremental` (insert_overwrite of the partitions in the new
-- data, Parquet), on the same rows as events_exact. sized=false keeps it dbt-spark's.
{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
          partition_by=['event_date'], file_format='parquet', sized=false) }}
select * from {{ ref('stg_events') }}
{% if is_incremental() %}
where event_date >= date_sub(date'2025-01-01', -({{ var('event_days') }} - 7))
{% endif %}

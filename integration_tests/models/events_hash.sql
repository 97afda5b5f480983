-- The naive method of the study (hash on partition + rand % k), kept for comparison.
{{ config(materialized='sized_incremental', partition_by=['event_date'],
          target_file_size='32KB', distribution='hash', incremental_strategy='insert_overwrite') }}
select * from {{ ref('stg_events') }}

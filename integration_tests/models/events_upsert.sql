-- Upsert by event_id: the incremental run re-sends the last week with amounts changed, which
-- rewrites only the files holding those keys; inline clustering every 2nd commit.
{{ config(materialized='sized_incremental', partition_by=['event_date'], unique_key='event_id',
          incremental_strategy='upsert', target_file_size='32KB', distribution='exact',
          cluster_by=['session_id'], cluster_every_n_commits=2) }}
select event_id, event_date, customer_id, session_id, event_type,
       amount {% if is_incremental() %} + 1 {% endif %} as amount, payload
from {{ ref('stg_events') }}
{% if is_incremental() %}
where event_date >= date_sub(date'2025-01-01', -({{ var('event_days') }} - 7))
{% endif %}

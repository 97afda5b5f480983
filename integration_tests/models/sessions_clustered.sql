-- Appends (insert strategy) clustered along a Z-order curve on (session_id, customer_id) by
-- the sized_cluster_hook post-hook after every run.
{{ config(materialized='sized_incremental', incremental_strategy='insert',
          target_file_size='64KB', cluster_by=['session_id', 'customer_id'],
          cluster_strategy='zorder', post_hook="{{ sized_cluster_hook() }}") }}
select session_id, customer_id, count(*) as events, sum(amount) as amount
from {{ ref('stg_events') }}
{% if is_incremental() %} where event_date >= date_sub(date'2025-01-01', -({{ var('event_days') }} - 1)) {% endif %}
group by session_id, customer_id

{% snapshot s3_snapshot %}
{{ config(target_schema='sized_it', unique_key='id', strategy='check', check_cols=['tag']) }}
select id, tag from {{ ref('s3_events') }}
{% endsnapshot %}

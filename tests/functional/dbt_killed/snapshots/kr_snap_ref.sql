{% snapshot kr_snap_ref %}
{{ config(strategy='timestamp', unique_key='id', updated_at='updated_at',
          hard_deletes='invalidate', partition_by=['region']) }}
{{ kr_snapshot_source() }}
{% endsnapshot %}

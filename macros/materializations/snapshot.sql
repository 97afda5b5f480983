{#-- dbt's `snapshot` on a sized_spark profile: Parquet snapshots (file_format unset or
     parquet, on a session profile, not `sized: false`: sized_takes_model) are written by
     the sized engine, every run one instant of the table's timeline; other snapshots get
     dbt-spark's materialization unchanged (which wants delta, iceberg or hudi). --#}
{% materialization snapshot, adapter='sized_spark' %}
  {%- if sized_takes_model() -%}
    {{ return(sized_snapshot()) }}
  {%- endif -%}
  {{ return(materialization_snapshot_spark()) }}
{% endmaterialization %}


{#-- dbt's snapshot lifecycle with the engine in place of CREATE TABLE / MERGE: the first run
     writes dbt's build_snapshot_table rows as a full build; later runs hand dbt's staging
     rows (snapshot_staging_table: new versions to insert, current rows to close) to the
     engine as one upsert keyed by dbt_scd_id, in which a matched row takes only its
     dbt_valid_to, as dbt's merge sets only that. --#}
{% macro sized_snapshot() %}
  {%- do adapter.sized_require_session('snapshot ' ~ model.schema ~ '.' ~ model.alias) -%}
  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set target_relation_exists, target_relation = get_or_create_relation(
          database=none, schema=model.schema, identifier=target_table, type='table') -%}
  {%- if not adapter.check_schema_exists(model.database, model.schema) -%}
    {%- do create_schema(model.schema) -%}
  {%- endif -%}
  {%- if not target_relation.is_table -%}
    {%- do exceptions.relation_wrong_type(target_relation, 'table') -%}
  {%- endif -%}

  {%- do adapter.sized_check_config(model.config, 'snapshot ' ~ target_relation.schema ~ '.'
                                    ~ target_relation.identifier, values=false) -%}
  {{ run_hooks(pre_hooks) }}

  {#-- an unknown strategy fails here, before anything is written --#}
  {%- do sized_snapshot_check_strategy(config.get('strategy')) -%}
  {%- set strategy = strategy_dispatch(config.get('strategy'))(
          model, "snapshotted_data", "source_data", model['config'], target_relation_exists) -%}
  {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
  {%- if target_relation_exists -%}
    {{ adapter.assert_valid_snapshot_target_given_strategy(target_relation, columns, strategy) }}
    {#-- the staging SQL reads the table: a run that crashed must be rolled back before Spark
         lists the table's files for it, not only under the write's lock, or the rows
         would be read from a half-published file list --#}
    {%- do adapter.sized_recover(target_relation) -%}
    {%- set write_sql = sized_snapshot_changes_sql(strategy, target_relation, columns) -%}
  {%- else -%}
    {%- set write_sql = build_snapshot_table(strategy, model['compiled_code']) -%}
  {%- endif -%}
  {%- set result = adapter.sized_write(target_relation, write_sql,
                                       sized_snapshot_config(columns),
                                       not target_relation_exists, 'snapshot') -%}

  {#-- dbt's status line and run_results.json's adapter_response: the write's figures --#}
  {%- do store_result('main', response=result['response']) -%}

  {% set should_revoke = should_revoke(target_relation_exists, full_refresh_mode=False) %}
  {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmacro %}


{#-- The engine's config for a snapshot: the table's key is dbt_scd_id (one row per version),
     a matched row takes only dbt_valid_to, and the source's new columns are added to the
     table (dbt's snapshot adds them too). The snapshot's own unique_key, strategy and merge
     options describe the source, not the table's rows, so they are replaced. --#}
{% macro sized_snapshot_config(columns) %}
  {%- set write_config = {} -%}
  {%- do write_config.update(model.config) -%}
  {%- for key in ['merge_exclude_columns', 'incremental_predicates', 'predicates',
                  'event_time', 'delete_column', 'precombine_column'] -%}
    {%- do write_config.pop(key, none) -%}
  {%- endfor -%}
  {%- do write_config.update({'unique_key': columns.dbt_scd_id,
                              'incremental_strategy': 'upsert',
                              'merge_update_columns': [columns.dbt_valid_to],
                              'on_schema_change': 'append_new_columns'}) -%}
  {{ return(write_config) }}
{% endmacro %}


{#-- dbt's staging rows without its helper columns. dbt's MERGE inserts only versions whose
     dbt_scd_id the table does not hold; with the timestamp strategy and hard deletes, a key
     that comes back with an updated_at seen before has such an id (an upsert would reopen
     that old version), so those rows are left out, as the MERGE leaves them. --#}
{% macro sized_snapshot_changes_sql(strategy, target_relation, columns) %}
  {%- set helpers = ['dbt_change_type'] -%}
  {%- if strategy.unique_key | is_list -%}
    {%- for key in strategy.unique_key -%}
      {%- do helpers.append('dbt_unique_key_' ~ loop.index) -%}
    {%- endfor -%}
  {%- else -%}
    {%- do helpers.append('dbt_unique_key') -%}
  {%- endif -%}
  {%- set scd_id = columns.dbt_scd_id -%}
  select * except ({{ helpers | join(', ') }})
  from (
    {{ snapshot_staging_table(strategy, model['compiled_code'], target_relation) }}
  ) as sized_snapshot_changes
  {%- if strategy.hard_deletes in ['invalidate', 'new_record'] and config.get('strategy') != 'check' %}
  where dbt_change_type <> 'insert'
     or {{ scd_id }} not in (select {{ scd_id }} from {{ target_relation }})
  {%- endif %}
{% endmacro %}


{#-- dbt's own error for an unknown strategy names the macro it looked for ("strategy macro
     'x' was not found in package 'None'"); this one names the config key and what is
     accepted. Package-qualified names are left to dbt's. --#}
{% macro sized_snapshot_check_strategy(name) %}
  {%- if name is string and '.' not in name and ('snapshot_' ~ name ~ '_strategy') not in context -%}
    {%- do exceptions.raise_compiler_error(
          "snapshot " ~ model.name ~ ": strategy '" ~ name ~ "' is unknown; expected "
          ~ "'timestamp', 'check', or a custom strategy (a macro snapshot_" ~ name
          ~ "_strategy); nothing was written") -%}
  {%- endif -%}
{% endmacro %}


{#-- dbt's get_columns_in_relation macro returns the table's columns (dbt-core's contract,
     which its snapshot staging relies on: hard_deletes new_record copies a deleted key's
     last values into its deletion record by these names); dbt-spark's returns the raw rows
     of DESCRIBE EXTENDED, whose rows have no name, so every value of a deletion record
     came out NULL. --#}
{% macro sized_spark__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{% endmacro %}

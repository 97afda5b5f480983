{#-- dbt-spark's `table` and `incremental` for the Python models it submits itself (to
     Databricks, python_submissions.py): `sized: false`, a file_format other than parquet,
     or a profile whose method is thrift, http or odbc. dbt-core runs a Python statement
     only when a materialization calls `statement(..., language='python')` in its own body
     (submit_python_job's guard: macro stack [materialization, statement]); calling
     dbt-spark's materialization from ours adds a frame, which the guard refuses. So table.sql
     and incremental.sql hold dbt-spark's Python statements, and these macros its steps
     around them, as dbt-spark 1.11's table.sql and incremental/incremental.sql have them. --#}

{#-- dbt-spark's table, before its statement: pre-hooks, then the old relation dropped
     (unless a delta or iceberg table is replaced in place). --#}
{% macro sized_dbt_spark_python_table_begin() %}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema,
                                              identifier=model['alias']) -%}
  {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                database=database, type='table') -%}
  {{ run_hooks(pre_hooks) }}
  {%- set file_format = config.get('file_format', validator=validation.any[basestring]) -%}
  {%- set in_place = old_relation is not none
        and ((old_relation.is_delta and file_format == 'delta')
             or (old_relation.is_iceberg and file_format == 'iceberg')) -%}
  {%- if not in_place -%}
    {%- set old_type = old_relation.type if old_relation is not none else target_relation.type -%}
    {{ adapter.drop_relation(target_relation.incorporate(type=old_type)) }}
  {%- endif -%}
  {{ return({'target': target_relation, 'existing': old_relation, 'full_refresh': true}) }}
{% endmacro %}


{#-- dbt-spark's incremental, before its statements: the file format, strategy and
     on_schema_change checked, dynamic partition overwrite for insert_overwrite, pre-hooks,
     and a relation to rebuild (a view, --full-refresh) dropped. build: the model is
     created as a table (no relation, or rebuilt); otherwise it goes to a temporary
     relation that the strategy's SQL merges. --#}
{% macro sized_dbt_spark_python_incremental_begin() %}
  {%- set file_format = dbt_spark_validate_get_file_format(config.get('file_format', default='parquet')) -%}
  {%- set strategy = dbt_spark_validate_get_incremental_strategy(
        config.get('incremental_strategy') or 'append', file_format) -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(
        config.get('on_schema_change'), default='ignore') -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- if strategy in ['insert_overwrite', 'microbatch'] and config.get('partition_by', none) -%}
    {%- call statement() -%}
      set spark.sql.sources.partitionOverwriteMode = DYNAMIC
    {%- endcall -%}
  {%- endif -%}
  {{ run_hooks(pre_hooks) }}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set build = existing_relation is none or existing_relation.is_view or full_refresh -%}
  {%- if existing_relation is not none and build
        and not (file_format == 'delta' and existing_relation.is_delta) -%}
    {%- do adapter.drop_relation(existing_relation) -%}
  {%- endif -%}
  {{ return({'target': this, 'existing': existing_relation, 'full_refresh': full_refresh,
             'build': build, 'strategy': strategy, 'on_schema_change': on_schema_change,
             'tmp': this.incorporate(path={'identifier': this.identifier ~ '__dbt_tmp'})}) }}
{% endmacro %}


{#-- dbt-spark's incremental after its Python statement wrote the temporary relation: the
     schema change handled, the strategy's SQL, the temporary table dropped. --#}
{% macro sized_dbt_spark_python_incremental_merge(plan) %}
  {%- do process_schema_changes(plan.on_schema_change, plan.tmp, plan.existing) -%}
  {%- set predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
  {%- call statement('main') -%}
    {{ dbt_spark_get_incremental_sql(plan.strategy, plan.tmp, plan.target, plan.existing,
                                     config.get('unique_key', none), predicates) }}
  {%- endcall -%}
  {%- call statement('drop_relation') -%}
    drop table if exists {{ plan.tmp }}
  {%- endcall -%}
{% endmacro %}


{#-- dbt-spark's steps after the model was written: grants, docs, post-hooks. --#}
{% macro sized_dbt_spark_python_end(plan) %}
  {%- set should_revoke = should_revoke(plan.existing, full_refresh_mode=plan.full_refresh) -%}
  {%- do apply_grants(plan.target, config.get('grants'), should_revoke) -%}
  {%- do persist_docs(plan.target, model) -%}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [plan.target]}) }}
{% endmacro %}

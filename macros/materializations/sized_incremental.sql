{#-- sized_incremental: the model's SQL is planned and written by the adapter in files of
     target_file_size (python_adapter.spark.writer); this macro only wires dbt's lifecycle. --#}
{% materialization sized_incremental, adapter='sized_spark', supported_languages=['sql'] %}
  {#-- first: over thrift / http / odbc the model fails here, before any hook or SQL runs --#}
  {%- do adapter.sized_require_session('sized_incremental model ' ~ this.schema ~ '.' ~ this.identifier) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set full_refresh = should_full_refresh() or existing_relation is none -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {#-- an enforced contract: checked here and by the engine, before anything is written --#}
  {%- set contracted = sized_contract(compiled_code) -%}
  {%- set result = adapter.sized_write(target_relation, contracted['sql'], contracted['config'],
                                       full_refresh) -%}

  {%- call noop_statement('main', result['message'], 'OK', result['rows_changed']) -%}
    -- {{ result['message'] }}
  {%- endcall -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode=full_refresh) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

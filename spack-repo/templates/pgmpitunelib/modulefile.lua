{% extends "modules/modulefile.lua" %}
{# Lmod module of pgmpitunelib (Spack). Same as Spack's default, except that the values that must
   follow the site at LOAD time are not frozen at generation time: PGMPITUNE_PROFILE_DIR is computed
   in Lua by pgmpitune-site.lua, and the preload variables use pushenv (restored on unload). #}
{% set pgmpi_dynamic = ["PGMPITUNE_PROFILE_DIR", "SRUN_EXPORT_ENV", "OMPI_MCA_mca_base_env_list"] %}
{# the library label of the published profiles: <family>-<version>, Intel MPI's Spack package -> intelmpi #}
{% set pgmpi_mpi_label = ("intelmpi-" ~ spec['mpi'].version.up_to(2)) if spec['mpi'].name.startswith("intel") else (spec['mpi'].name ~ "-" ~ spec['mpi'].version) %}
{% block environment %}
{% for command_name, cmd in environment_modifications %}
{% if cmd.name not in pgmpi_dynamic %}
{% if command_name == 'PrependPath' %}
prepend_path("{{ cmd.name }}", "{{ cmd.value }}", "{{ cmd.separator }}")
{% elif command_name in ('AppendPath', 'AppendFlagsEnv') %}
append_path("{{ cmd.name }}", "{{ cmd.value }}", "{{ cmd.separator }}")
{% elif command_name in ('RemovePath', 'RemoveFlagsEnv') %}
remove_path("{{ cmd.name }}", "{{ cmd.value }}", "{{ cmd.separator }}")
{% elif command_name == 'SetEnv' %}
setenv("{{ cmd.name }}", "{{ cmd.value }}")
{% elif command_name == 'UnsetEnv' %}
unsetenv("{{ cmd.name }}")
{% endif %}
{% endif %}
{% endfor %}
{% endblock %}

{% block footer %}
-- One build of pgmpitunelib at a time (the MPI hierarchy swaps it when the MPI is swapped).
family("pgmpitunelib")

-- Computed when the module is loaded from the site file and $PGMPI_SITE_MACHINE (docs/configuration.md):
-- /etc/pgmpi-site/site.conf (or $PGMPI_SITE_CONFIG); see pgmpitune-site.lua.
local pgmpi_site = loadfile("{{ spec.prefix }}/share/pgmpitunelib/pgmpitune-site.lua")()
setenv("PGMPITUNE_PROFILE_DIR", pgmpi_site.profile_dir("{{ pgmpi_mpi_label }}"))
-- the MPI library's own decision file of the same published set, if there is one (pgmpitune-site.lua)
for k, v in pairs(pgmpi_site.native_env("{{ pgmpi_mpi_label }}")) do setenv(k, v) end
-- usage recording, when the site file names a spool directory (usage_dir; off by default: docs/usage.md)
for k, v in pairs(pgmpi_site.usage_env()) do setenv(k, v) end
{% if spec.variants['preload'].value %}

-- preload variant: launched ranks only, never the login shell
pushenv("SRUN_EXPORT_ENV", "ALL,LD_PRELOAD={{ spec.prefix }}/lib/libpgmpitune.so")
{% if spec['mpi'].name == 'openmpi' %}
pushenv("OMPI_MCA_mca_base_env_list", "LD_PRELOAD={{ spec.prefix }}/lib/libpgmpitune.so")
{% endif %}
{% endif %}
{% endblock %}

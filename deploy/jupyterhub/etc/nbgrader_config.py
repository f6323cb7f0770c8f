# nbgrader's configuration for every user of the course's JupyterHub. The image
# (deploy/jupyterhub/Dockerfile) copies this folder to /etc/jupyter/mha-course
# and puts it on JUPYTER_CONFIG_PATH; `make course-test` runs its hub with it.
import os

c = get_config()  # noqa: F821 (nbgrader defines it)

# the exchange: a folder every user's server mounts (Zero to JupyterHub:
# config.yaml's singleuser.storage.extraVolumeMounts), made with mode 1777
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")

# On Zero to JupyterHub every server runs as the Unix user jovyan: nbgrader
# then names a submission by JUPYTERHUB_USER, and the submission's owner
# (jovyan) says nothing about who made it, so `nbgrader collect` need not
# compare the two.
c.CollectApp.check_owner = False

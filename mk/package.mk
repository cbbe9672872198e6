# mk/package.mk — Debian packages (cmake/packaging.cmake, issue 19),
# included by the Makefile.
#   make package        build/packages/*.deb: libswarm0, swarmrun,
#                       libswarm-dev, and libswarm-mpi0 when MPI was found
#   make test-package   installs them with dpkg into a throwaway root (never
#                       this machine's dpkg database), builds and runs a
#                       program against them (pkg-config, find_package), runs
#                       the packaged swarmrun -- pigz, renders the man pages,
#                       checks the MPI package's Depends, purges and checks
#                       nothing is left (tests/install/package.sh)
EXTRA_TESTS += test-package

.PHONY: package test-package

package: build
	rm -rf $(BUILD)/packages
	cd $(BUILD) && cpack -G DEB
	@ls $(BUILD)/packages/*.deb

test-package: package
	tests/install/package.sh $(BUILD)

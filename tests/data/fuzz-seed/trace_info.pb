"B
(vm_pid_24596/20261201T113121.315631Z_000vmhostname"vm(”À@*H
0.1.0
2.13.0+cpu3.11.7"+Linux-6.18.44-fc-v657-x86_64-with-glibc2.362
/tmp/tmpp8gxczweÀ„=08d:
CPU BÌ€…‘š¼Çöªş¼²!ˆ½²! ±ª½²!Jò·ÎÂš¼ÇöÏµ†ä!°Á†ä! àã†ä!P€¨øñ ß™íb	ntrace.pbbcpu_util.pbbhost_mem.pbjR
cpu_util.pbÁ@4163fd6cf8dfb7bd08de8f5ad4a7e375a850f3ebc29b089f594a4df8e715908ejR
host_mem.pbÔ@4a03031d2a53d92955978a7b8f23799a099c4a39c2eb9506c0089a02ca0adfb8jc
memory_snapshot_rank0.pickle§.@bc69d56e64e88a934ead6445c6911d015b4bb56651926397959e90db8edf3d36jP
	ntrace.pbş+@b28ac5456402c18423fb0d45e26a2d2d587d39814e3fb288d2003528a63da595jR

trace.json×‹	@054a64578b49182288c4f4b5e79eaf1c515908dcc2da5aefb67f44cd2214cc20‚œ
memory_snapshot_rank0.pickle"cpu*cpu-allocator-hook0080@ĞJpythonPà•¿¾š¼ÇöXøç¿š¼ÇöbÑ»€‰¼Çö¤É¸ª‘!Ñ¸ª‘!j»ŸØçš¼ÇöÅœ‰!Ğ¤‰! ¸‰!pxŠD:Bartifact_cache_dir is not set (nor KINETOSCOPE_ARTIFACT_CACHE_DIR)¢0
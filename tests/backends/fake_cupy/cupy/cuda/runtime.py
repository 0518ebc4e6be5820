def deviceSynchronize():
    pass


def getDeviceCount():
    return 1
